/**
 * `npm run admin -- identity reset-link <email>` (X-ID-RST-7): prints a password reset link for the
 * account, valid 15 minutes, ending its earlier links. No mail is sent: the operator hands the link
 * to its owner by a channel they trust (as Auth0's change-password ticket).
 */
import { systemClock } from "../server/clock.ts";
import { identityListener } from "../handlers/identity/config.ts";
import { issueResetLink } from "../handlers/identity/domain/accounts/password-reset.ts";
import { createIdentityStorage } from "../handlers/identity/storage/index.ts";
import type { AdminContext } from "./admin.ts";

export async function printResetLink(email: string, ctx: AdminContext): Promise<number> {
  const issuer = identityListener(ctx.config).publicUrl;
  const issued = await ctx.withServiceDb("identity", (db) =>
    issueResetLink({ storage: createIdentityStorage(db), clock: systemClock, issuer }, email),
  );
  if (!issued) {
    console.error(`No identity account has the address ${email}.`);
    return 1;
  }
  console.log(issued.link);
  console.error(`Valid until ${issued.expiresAt}, once; it ends the account's earlier reset links.`);
  return 0;
}
