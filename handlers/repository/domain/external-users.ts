/**
 * Users who come with the trusted issuer's access tokens (X-RB-15). A verified token's `iss` + `sub`
 * names one repository user, created on the first request that shows such a token and found by the
 * same pair afterwards (the subject's email or name can change at the issuer; `sub` cannot,
 * OpenID Connect Core §5.7). The user has no password, so `POST /auth/login` never matches it, and
 * its address is `<user id>@external.invalid`: the access token carries no email, and `.invalid`
 * (RFC 2606) can never be delivered to nor registered by anyone.
 */
import { randomUUID } from "node:crypto";
import type { Clock } from "../../../server/clock.ts";
import type { ExternalAccountStore } from "../storage/external-accounts.ts";
import type { TrustedIssuer } from "./trusted-issuer.ts";
import type { UserPrincipal } from "./tokens.ts";

/** Not a scrypt hash: verifyPassword refuses it before any work, and no password matches it. */
const NO_PASSWORD = "external";

export const externalEmailOf = (userId: string) => `${userId}@external.invalid`;

export function createExternalUsers(trusted: TrustedIssuer, store: ExternalAccountStore, clock: Clock) {
  /** The repository user of a trusted issuer's access token, created on its first use; 401 when the token fails a check. */
  async function authenticate(token: string): Promise<UserPrincipal> {
    const { issuer, subject } = await trusted.verify(token);
    const at = clock.now().toISOString();
    const id = randomUUID();
    const userId = await store.userFor(
      { issuer, subject, at },
      { id, email: externalEmailOf(id), password_hash: NO_PASSWORD, created_at: at },
    );
    return { kind: "user", userId };
  }

  return { issuer: trusted.issuer, authenticate };
}

export type ExternalUsers = ReturnType<typeof createExternalUsers>;
