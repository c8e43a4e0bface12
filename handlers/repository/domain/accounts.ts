/** User accounts: creation (admin command) and password login under the shared sign-in throttle (X-RB-6, X-RB-9). */
import { randomUUID } from "node:crypto";
import type { Clock } from "../../../server/clock.ts";
import { badCredentials, conflict, rateLimited, unauthenticated, type DomainError } from "../../../server/domain/errors.ts";
import { DUMMY_HASH, hashPassword, verifyPassword } from "../../../server/security/passwords.ts";
import type { SignInRefusal, SignInThrottle } from "../../../server/security/sign-in-throttle.ts";
import type { UserRow } from "../storage/schema.ts";
import type { UserStore } from "../storage/users.ts";
import { REALM } from "./tokens.ts";

/** The 429 of a refused login: what is limited, and when to come back. */
function tooManyAttempts(refusal: SignInRefusal): DomainError {
  const when = `Try again in ${refusal.retryAfterSeconds} seconds.`;
  const what = {
    "account-address": "Too many failed sign-in attempts for this account from your address.",
    address: "Too many failed sign-in attempts from your address.",
    account: "This account has had many failed sign-in attempts, so signing in to it is slowed down.",
  }[refusal.reason];
  return rateLimited(`${what} ${when}`, refusal.retryAfterSeconds);
}

/** Creates a user (the admin command, and tests); an email already registered is a conflict. */
export async function createUser(users: UserStore, clock: Clock, email: string, password: string): Promise<UserRow> {
  if (await users.findByEmail(email)) throw conflict("A user with this email already exists.");
  const row: UserRow = {
    id: randomUUID(),
    email: email.toLowerCase(),
    password_hash: await hashPassword(password),
    created_at: clock.now().toISOString(),
  };
  await users.insert(row);
  return row;
}

export function createAccounts(users: UserStore, clock: Clock, throttle: SignInThrottle) {
  /**
   * Checks an email and password from the client `address`. Unknown email and wrong password take
   * the same time and give the same answer, and the throttle treats both alike. A refused attempt
   * is 429 with Retry-After, whatever the password, before any hash is computed.
   */
  async function login(email: string, password: string, address: string): Promise<UserRow> {
    const outcome = await throttle.attempt(
      email,
      address,
      async () => {
        const user = await users.findByEmail(email);
        const ok = await verifyPassword(password, user?.password_hash ?? DUMMY_HASH);
        return ok ? user : undefined;
      },
      (user) => user !== undefined,
    );
    if (outcome.refused) throw tooManyAttempts(outcome.refused);
    if (!outcome.result) throw badCredentials("invalid_credentials", "The email or password is wrong.");
    return outcome.result;
  }

  /** The user a valid token names; one deleted since the token was issued makes the token invalid. */
  async function currentUser(userId: string): Promise<UserRow> {
    const user = await users.findById(userId);
    if (!user) throw unauthenticated(REALM, "The user of this token no longer exists.", "invalid_token");
    return user;
  }

  return { createUser: (email: string, password: string) => createUser(users, clock, email, password), login, currentUser };
}

export type Accounts = ReturnType<typeof createAccounts>;
