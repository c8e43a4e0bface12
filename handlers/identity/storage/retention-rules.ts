/**
 * What the identity service deletes, and when (README, "Retention"). Each period runs from the
 * moment a row stopped mattering (its expiry, the failure, the delivery), and each condition is
 * served by an index (migrations 0004 and 0009; checked by test/storage-query-plans.test.ts).
 */
import type { Config } from "../../../server/config.ts";
import type { PurgeRule } from "../../../server/storage/retention.ts";
import { webhookHistoryRules } from "../../../server/webhooks/retention-rules.ts";

const before = (now: Date, seconds: number) => new Date(now.getTime() - seconds * 1000).toISOString();

/** Rows whose `column` (an ISO time) is more than `seconds` before now. */
const olderThan = (name: string, table: string, key: string, column: string, seconds: number): PurgeRule => ({
  name,
  table,
  key,
  expired: (now) => ({ sql: `${column} < ?`, bindings: [before(now, seconds)] }),
  orderBy: column,
});

export function identityRetentionRules(config: Config): PurgeRule[] {
  return [
    // Short-lived secrets: single-use codes (a replayed code within the period still revokes what
    // it produced), pending authorization requests and social sign-in states.
    olderThan("codes", "oauth_codes", "code_hash", "expires_at", config.IDENTITY_RETENTION_CODES_SECONDS),
    olderThan("authorization requests", "oauth_requests", "id", "expires_at", config.IDENTITY_RETENTION_CODES_SECONDS),
    olderThan("social states", "oauth_social_states", "state_hash", "expires_at", config.IDENTITY_RETENTION_CODES_SECONDS),
    // Refresh tokens, rotated or not, once expired: a rotated token is kept until then because its
    // reuse revokes the family (RFC 9700 §4.14.2), and an expired one is refused before that check.
    olderThan("refresh tokens", "oauth_refresh_tokens", "id", "expires_at", config.IDENTITY_RETENTION_REFRESH_TOKENS_SECONDS),
    // Grants (refresh families) once everything issued from them has ended: their last access
    // token and refresh token expired, or the grant was revoked (`ends_at`, domain/oauth/grant-end.ts).
    // Deleting one deletes what is left of its family; a missing grant reads as ended (X-ID-TOK-5).
    olderThan("grants", "oauth_grants", "id", "ends_at", config.IDENTITY_RETENTION_REFRESH_TOKENS_SECONDS),
    // A revoked access token's row only matters until the token itself expires (1 hour).
    olderThan(
      "revoked access tokens",
      "oauth_revoked_access_tokens",
      "jti",
      "expires_at",
      config.IDENTITY_RETENTION_REVOKED_TOKENS_SECONDS,
    ),
    olderThan("sessions", "oauth_sessions", "id_hash", "expires_at", config.IDENTITY_RETENTION_SESSIONS_SECONDS),
    // Throttling records: never shorter than the windows that count them (config.ts checks).
    olderThan("sign-in failures", "oauth_signin_failures", "id", "failed_at", config.IDENTITY_RETENTION_THROTTLE_SECONDS),
    olderThan("registration attempts", "registration_attempts", "id", "at", config.IDENTITY_RETENTION_THROTTLE_SECONDS),
    // An address is known to an account only this long after its last sign-in from it (X-ID-AZ-4).
    olderThan("known sign-in addresses", "oauth_signin_known_addresses", "key", "last_success_at", config.LOGIN_KNOWN_ADDRESS_SECONDS),
    // Webhook history: finished deliveries, their attempts and events; pending deliveries stay.
    ...webhookHistoryRules(config.IDENTITY_RETENTION_WEBHOOK_HISTORY_SECONDS),
  ];
}
