/**
 * What the identity service deletes, and when (docs/operations.md, "Data growth"). Each period runs
 * from the moment a row stopped mattering (its expiry, the failure, the delivery), and each
 * condition is served by an index (migrations 0004 and 0009; checked by test/storage/query-plans.test.ts).
 */
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

/** How long each kind of row is kept once it stopped mattering, in seconds (handlers/identity/config.ts). */
export interface IdentityRetentionPeriods {
  codesSeconds: number;
  refreshTokensSeconds: number;
  revokedTokensSeconds: number;
  sessionsSeconds: number;
  throttleSeconds: number;
  knownAddressSeconds: number;
  webhookHistorySeconds: number;
  /** Sent and failed mail, from when it finished. */
  mailSeconds: number;
  auditSeconds: number;
}

export function identityRetentionRules(periods: IdentityRetentionPeriods): PurgeRule[] {
  return [
    // Short-lived secrets: single-use codes (a replayed code within the period still revokes what
    // it produced), pending authorization requests and social sign-in states.
    olderThan("codes", "oauth_codes", "code_hash", "expires_at", periods.codesSeconds),
    olderThan("authorization requests", "oauth_requests", "id", "expires_at", periods.codesSeconds),
    olderThan("social states", "oauth_social_states", "state_hash", "expires_at", periods.codesSeconds),
    // Refresh tokens, rotated or not, once expired: a rotated token is kept until then because its
    // reuse revokes the family (RFC 9700 §4.14.2), and an expired one is refused before that check.
    olderThan("refresh tokens", "oauth_refresh_tokens", "id", "expires_at", periods.refreshTokensSeconds),
    // Grants (refresh families) once everything issued from them has ended: their last access
    // token and refresh token expired, or the grant was revoked (`ends_at`, domain/oauth/grant-end.ts).
    // Deleting one deletes what is left of its family; a missing grant reads as ended (X-ID-TOK-5).
    olderThan("grants", "oauth_grants", "id", "ends_at", periods.refreshTokensSeconds),
    // A revoked access token's row only matters until the token itself expires (1 hour).
    olderThan("revoked access tokens", "oauth_revoked_access_tokens", "jti", "expires_at", periods.revokedTokensSeconds),
    olderThan("sessions", "oauth_sessions", "id_hash", "expires_at", periods.sessionsSeconds),
    // Throttling records: never shorter than the windows that count them (handlers/identity/config.ts checks).
    olderThan("sign-in failures", "oauth_signin_failures", "id", "failed_at", periods.throttleSeconds),
    olderThan("registration attempts", "registration_attempts", "id", "at", periods.throttleSeconds),
    // An address is known to an account only this long after its last sign-in from it (X-ID-AZ-4).
    olderThan("known sign-in addresses", "oauth_signin_known_addresses", "key", "last_success_at", periods.knownAddressSeconds),
    // Webhook history: finished deliveries, their attempts and events; pending deliveries stay.
    ...webhookHistoryRules(periods.webhookHistorySeconds),
    // Mail once sent or failed (X-ID-MAIL-1): pending messages have no `finished_at` and stay.
    olderThan("mail", "mail_outbox", "id", "finished_at", periods.mailSeconds),
    // The audit log, counted from when each event happened (X-ID-AUD-5; index audit_events_time).
    olderThan("audit events", "audit_events", "id", "occurred_at", periods.auditSeconds),
    // Password reset requests (X-ID-RST-6): counted by the limits for an hour, their links dead
    // after 15 minutes; the throttle period is at least that hour (handlers/identity/config.ts checks).
    olderThan("password resets", "password_resets", "id", "created_at", periods.throttleSeconds),
    // Email verification links once expired (X-ID-EVF-2), used or not: a used one is refused as an unknown one.
    olderThan("email verifications", "email_verifications", "token_hash", "expires_at", periods.codesSeconds),
    // Passkey challenges (X-ID-PK-2), used or not, once expired: as short-lived as codes.
    olderThan("passkey challenges", "passkey_challenges", "challenge", "expires_at", periods.codesSeconds),
    // private_key_jwt assertion ids (X-ID-CC-7): a replay is refused by expiry once the row is gone.
    olderThan("client assertion ids", "client_assertion_jtis", "jti", "expires_at", periods.codesSeconds),
    // Device authorizations (X-ID-DEV-1) once expired, whatever they came to: as short-lived as codes;
    // a device code no longer found is refused as an unknown one. Wrong user codes typed on the
    // verification page (X-ID-DEV-4): kept as long as the other throttling records, at least their window.
    olderThan("device authorizations", "device_authorizations", "id", "expires_at", periods.codesSeconds),
    olderThan("device code guesses", "device_code_guesses", "id", "at", periods.throttleSeconds),
    // Pushed authorization requests (X-ID-PAR-3), used or not, once expired: as short-lived as codes.
    olderThan("pushed authorization requests", "oauth_pushed_requests", "request_uri_hash", "expires_at", periods.codesSeconds),
    // DPoP proofs (X-ID-DPOP-2) once outside their freshness window: an older proof is refused by its `iat`.
    olderThan("dpop proofs", "oauth_dpop_proofs", "proof_key", "expires_at", periods.codesSeconds),
    // Back-channel logout tokens once sent or failed (X-ID-LOGOUT-10), kept as long as webhook
    // history; pending ones have no `finished_at` and stay. The sessions' applications go with
    // their sessions (a cascade), so they need no rule of their own.
    olderThan("back-channel logouts", "backchannel_logouts", "id", "finished_at", periods.webhookHistorySeconds),
  ];
}
