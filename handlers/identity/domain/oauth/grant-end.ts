/**
 * When a grant ends: the moment after which nothing issued from it can be live (its access tokens,
 * its refresh family). Stored as `oauth_grants.ends_at`; the retention purge deletes a grant that
 * long after it (storage/retention-rules.ts), and with it what is left of its family. The stored
 * value only has to be at or after the true end, never before it: a grant deleted early would end
 * its live tokens (X-ID-TOK-5 reads a missing grant as ended).
 * - At the code exchange: the later of its first access token's expiry and its first refresh
 *   token's.
 * - At a rotation: a rotation issues an access token (1 hour) and a refresh token (30 days, from
 *   now), so an active family outlives its recorded end. The end is moved when the new refresh
 *   token would outlive it, and then a day past it, so an active family writes its grant about
 *   once a day rather than on every rotation (the token endpoint is the hot path).
 * - At a revocation (storage: revokeGrant): everything issued from it ends at once.
 */
import { ACCESS_TOKEN_TTL_SECONDS } from "../access-tokens.ts";

/** How far past a rotation's refresh token a moved end is set (fewer writes; later purge). */
export const GRANT_END_SLACK_SECONDS = 24 * 3600;

/** The end of a grant made at `issuedAtMs`, with its first refresh token's expiry if it has one. */
export function grantEndsAt(issuedAtMs: number, refreshExpiresAt: string | undefined): string {
  const accessEnd = new Date(issuedAtMs + ACCESS_TOKEN_TTL_SECONDS * 1000).toISOString();
  return refreshExpiresAt !== undefined && refreshExpiresAt > accessEnd ? refreshExpiresAt : accessEnd;
}

/** The grant's new end after a rotation whose refresh token expires at `childExpiresAt`; undefined when the recorded end already covers it. */
export function movedGrantEnd(recordedEnd: string | null, childExpiresAt: string): string | undefined {
  if (recordedEnd !== null && recordedEnd >= childExpiresAt) return undefined;
  return new Date(Date.parse(childExpiresAt) + GRANT_END_SLACK_SECONDS * 1000).toISOString();
}
