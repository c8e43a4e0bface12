/** First organization and admin on a fresh install (`npm run admin -- identity create-org …`). */
import { randomUUID } from "node:crypto";
import type { Clock } from "../../../../server/clock.ts";
import { hashPassword } from "../../../../server/security/passwords.ts";
import type { IdentityStorage } from "../../storage/index.ts";

/** The stores an account is made in. */
type AccountStores = Pick<IdentityStorage, "transaction" | "organizations" | "users">;

export interface BootstrapInput {
  organizationName: string;
  email: string;
  password: string;
  firstName: string;
  lastName: string;
}

/**
 * Creates the organization and makes the user (created if the email is new, with this password)
 * its admin. One transaction: nothing is half-made.
 */
export async function createOrganizationWithAdmin(storage: AccountStores, clock: Clock, input: BootstrapInput) {
  const now = clock.now().toISOString();
  const passwordHash = await hashPassword(input.password);
  return storage.transaction(async (trx) => {
    const organization = { id: randomUUID(), name: input.organizationName, created_at: now };
    await storage.organizations.insert(organization, trx);
    let user = await storage.users.findByEmail(input.email, trx);
    const created = !user;
    if (!user) {
      user = {
        id: randomUUID(),
        email: input.email.toLowerCase(),
        password_hash: passwordHash,
        first_name: input.firstName,
        last_name: input.lastName,
        email_verified: false,
        created_at: now,
        updated_at: now,
      };
      await storage.users.insert(user, trx);
    }
    await storage.organizations.addAdmin(organization.id, user.id, now, trx);
    return { organization, user, created };
  });
}

export interface AccountInput {
  email: string;
  password: string;
  firstName: string;
  lastName: string;
}

/**
 * Users made by an operator (`npm run admin -- identity create-users`): deployment-wide accounts
 * with a password, as a registration makes them, but through no application (so no `user.created`
 * reaches any application's webhooks, as with create-org's admin) and outside the registration
 * limit, which guards the unauthenticated endpoint. All of them in one transaction: either every
 * account exists or none does. An email already taken fails the whole batch (unique index).
 */
export async function createUserAccounts(storage: AccountStores, clock: Clock, inputs: AccountInput[]) {
  const now = clock.now().toISOString();
  // scrypt runs on libuv's thread pool: hashing a few at a time uses every core.
  const hashes: string[] = [];
  for (let i = 0; i < inputs.length; i += 4)
    hashes.push(...(await Promise.all(inputs.slice(i, i + 4).map((input) => hashPassword(input.password)))));
  const rows = inputs.map((input, i) => ({
    id: randomUUID(),
    email: input.email.toLowerCase(),
    password_hash: hashes[i]!,
    first_name: input.firstName,
    last_name: input.lastName,
    email_verified: false,
    created_at: now,
    updated_at: now,
  }));
  return storage.transaction(async (trx) => {
    for (const row of rows) await storage.users.insert(row, trx);
    return rows;
  });
}
