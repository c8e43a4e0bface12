/**
 * X-ID-TOK-5: whether a token still speaks for its user and its client. One rule, used by every
 * endpoint that accepts a token (UserAuth and AdminAuth operations, `/oauth/userinfo`,
 * `/oauth/introspect`, the refresh grant), so that they agree, and read from the database on each
 * use, so that every instance agrees at once: nothing is cached.
 *
 * What ends tokens, and the record that makes it visible here:
 * - an access token revoked alone: its `jti` row (`oauth_revoked_access_tokens`);
 * - a revoked refresh family, a reused rotated refresh token, a replayed code: the grant's `revoked_at`;
 * - a deleted application or user: their rows are gone (and their grants with them, by cascade);
 *   a client's own token (client credentials) has no user, and only its application decides;
 * - a disabled application: `enabled` false, and `tokens_not_before`, which keeps grants made
 *   before the disabling ended after it is enabled again.
 */
import type { Application } from "../storage/applications.ts";
import type { AccessTokenState } from "../storage/grants.ts";

/**
 * The grant of an access token: token endpoint `jti`s are `<grant id>.<random>` (oauth/grants/issue.ts),
 * so that ending a grant ends its access tokens without a row per token.
 */
export const grantOfJti = (jti: string): string | undefined => (/^[0-9a-f-]{36}\./.test(jti) ? jti.slice(0, 36) : undefined);

/** Whether something issued to `app` at `issuedAt` (ISO 8601 UTC) predates the application's last disabling. */
export function endedByDisabling(issuedAt: string, app: Pick<Application, "tokensNotBefore">): boolean {
  return app.tokensNotBefore !== null && issuedAt < app.tokensNotBefore;
}

/** Whether a grant (a refresh family and its access tokens) is still live for its application. */
export function grantLive(
  grant: { revoked_at: string | null; created_at: string },
  app: Pick<Application, "enabled" | "tokensNotBefore">,
): boolean {
  return !grant.revoked_at && app.enabled && !endedByDisabling(grant.created_at, app);
}

/**
 * A client's own token (client credentials, X-ID-CC-4): `sub` is the client id (RFC 9068 §2.2) and
 * no grant stands behind it, so no user has to exist; its application alone decides (X-ID-CC-8).
 */
export const isClientToken = (token: { userId: string; clientId: string; grantId: string | undefined }): boolean =>
  token.grantId === undefined && token.userId === token.clientId;

/**
 * Whether an access token whose signature, issuer, type and expiry checked out is live: not
 * revoked, its grant live, its user (unless it is a client's own token) and application still
 * there. `state` is undefined when the application (by client id) is gone. A user token's `jti`
 * without a grant is judged by the rest (the token endpoint never issues one; only in-process
 * fixtures mint them).
 */
export function accessTokenLive(
  token: { userId: string; clientId: string; grantId: string | undefined; issuedAtSeconds: number },
  state: AccessTokenState | undefined,
): boolean {
  if (!state || state.revoked) return false;
  if (!state.userExists && !isClientToken(token)) return false;
  const app = { enabled: state.enabled, tokensNotBefore: state.tokensNotBefore };
  if (token.grantId === undefined) return app.enabled && !endedByDisabling(new Date(token.issuedAtSeconds * 1000).toISOString(), app);
  const grant = state.grant;
  if (!grant || grant.application_id !== state.applicationId || grant.user_id !== token.userId) return false;
  return grantLive(grant, app);
}
