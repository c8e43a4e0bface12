/** First organization and admin on a fresh install (`npm run admin -- identity create-org …`). */
import { randomUUID } from "node:crypto";
import type { Clock } from "../../../../server/clock.ts";
import { hashPassword } from "../../../../server/security/passwords.ts";
import type { CoreQueries } from "../../storage/core-queries.ts";

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
export async function createOrganizationWithAdmin(core: CoreQueries, clock: Clock, input: BootstrapInput) {
  const now = clock.now().toISOString();
  const passwordHash = await hashPassword(input.password);
  return core.transaction(async (trx) => {
    const organization = { id: randomUUID(), name: input.organizationName, created_at: now };
    await core.insertOrganization(organization, trx);
    let user = await core.findUserByEmail(input.email, trx);
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
      await core.insertUser(user, trx);
    }
    await core.addAdmin(organization.id, user.id, now, trx);
    return { organization, user, created };
  });
}
