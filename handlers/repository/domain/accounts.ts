/** User accounts: creation (admin command) and password login with per-account brute-force protection. */
import { randomUUID } from "node:crypto";
import type { Clock } from "../../../server/clock.ts";
import { HttpProblem, conflict } from "../../../server/http/problem.ts";
import { DUMMY_HASH, hashPassword, verifyPassword } from "../../../server/security/passwords.ts";
import type { RepositoryQueries, UserRow } from "../storage/queries.ts";

export interface LoginPolicy { maxFailures: number; windowSeconds: number }

export function createAccounts(queries: RepositoryQueries, clock: Clock, policy: LoginPolicy) {
  /** Creates a user; an email already registered is a conflict. */
  async function createUser(email: string, password: string): Promise<UserRow> {
    if (await queries.findUserByEmail(email)) throw conflict("A user with this email already exists.");
    const row: UserRow = { id: randomUUID(), email: email.toLowerCase(), password_hash: await hashPassword(password), created_at: clock.now().toISOString() };
    await queries.insertUser(row);
    return row;
  }

  /**
   * Checks an email and password. Unknown email and wrong password take the same time and give the
   * same answer. After `maxFailures` failures within the window, the account is locked until the
   * oldest failure leaves the window (429 with Retry-After), whatever the password.
   */
  async function login(email: string, password: string): Promise<UserRow> {
    const now = clock.now();
    const since = new Date(now.getTime() - policy.windowSeconds * 1000).toISOString();
    if ((await queries.countRecentLoginFailures(email, since)) >= policy.maxFailures) {
      const oldest = await queries.oldestRecentLoginFailure(email, since);
      const retryAfter = Math.max(1, Math.ceil((Date.parse(oldest ?? now.toISOString()) + policy.windowSeconds * 1000 - now.getTime()) / 1000));
      throw new HttpProblem(429, "rate_limited", `Too many failed sign-in attempts for this account. Try again in ${retryAfter} seconds.`, {
        headers: { "Retry-After": String(retryAfter) },
      });
    }
    const user = await queries.findUserByEmail(email);
    const ok = await verifyPassword(password, user?.password_hash ?? DUMMY_HASH);
    if (!user || !ok) {
      await queries.recordLoginFailure(email, now.toISOString());
      throw new HttpProblem(401, "invalid_credentials", "The email or password is wrong.");
    }
    await queries.clearLoginFailures(email);
    return user;
  }

  return { createUser, login };
}

export type Accounts = ReturnType<typeof createAccounts>;
