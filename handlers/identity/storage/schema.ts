/**
 * The identity service's tables: for each its name, its columns and its row type, in one place
 * (server/storage/schema.ts). test/storage/schema.test.ts checks every table here against
 * the migrated database on SQLite and PostgreSQL. Tables that shared modules own (signing_keys,
 * server_secrets, the webhook tables, the sign-in throttle's) are declared by those modules.
 */
import { defineTable } from "../../../server/storage/schema.ts";

export interface OrganizationRow {
  id: string;
  name: string;
  created_at: string;
  /** Migration 0013 (X-ID-MFA-7): `required` or null (optional). */
  mfa_policy?: string | null;
}
export const organizations = defineTable<OrganizationRow>()("organizations", ["id", "name", "created_at", "mfa_policy"]);

export interface OrganizationAdminRow {
  organization_id: string;
  user_id: string;
  created_at: string;
}
export const organizationAdmins = defineTable<OrganizationAdminRow>()("organization_admins", ["organization_id", "user_id", "created_at"]);

export interface UserRow {
  id: string;
  email: string;
  password_hash: string | null;
  first_name: string;
  last_name: string;
  email_verified: boolean | number;
  created_at: string;
  updated_at: string;
}
export const users = defineTable<UserRow>()("users", [
  "id",
  "email",
  "password_hash",
  "first_name",
  "last_name",
  "email_verified",
  "created_at",
  "updated_at",
]);

/** A link to an upstream (social) identity: provider and subject name one user. */
export interface UserIdentityRow {
  provider: string;
  subject: string;
  user_id: string;
  created_at: string;
}
export const userIdentities = defineTable<UserIdentityRow>()("user_identities", ["provider", "subject", "user_id", "created_at"]);

/** One registration through POST /api/users, by client address: counted for its rate limit. */
export interface RegistrationAttemptRow {
  id: number;
  address: string;
  at: string;
}
export const registrationAttempts = defineTable<RegistrationAttemptRow>()("registration_attempts", ["id", "address", "at"]);

export interface ApplicationRow {
  id: string;
  organization_id: string | null;
  name: string;
  client_id: string;
  client_type: "public" | "confidential";
  redirect_uris: string;
  allowed_scopes: string;
  enabled_providers: string;
  branding: string;
  first_party: boolean | number;
  created_at: string;
  updated_at: string;
  /** Migration 0005 (X-ID-TOK-5): false while disabled; grants made before `tokens_not_before` are ended. Defaults on insert. */
  enabled?: boolean | number;
  tokens_not_before?: string | null;
  /** Migration 0007 (X-ID-CORS-2): JSON string[] of browser origins; null: the origins of the redirect URIs. */
  allowed_origins?: string | null;
  /** Migration 0013 (X-ID-MFA-7): `optional`, `required`, or null (the organization's policy). */
  mfa_policy?: string | null;
  /** Migration 0018 (X-ID-EVF-5): sign-in needs a verified email address; null (older rows) is false. */
  require_verified_email?: boolean | number | null;
  /** Migration 0020 (X-ID-CC-1): may use `client_credentials`; null (older rows) is false. */
  client_credentials_enabled?: boolean | number | null;
  /** Migration 0020 (X-ID-CC-2): JSON string[] of the scopes the grant may ask for; null is none. */
  client_credentials_scopes?: string | null;
  /** Migration 0020 (X-ID-CC-3): JSON string[] of the resource URIs (RFC 8707) it may ask tokens for; null is none. */
  resources?: string | null;
  /** Migration 0020 (X-ID-CC-5): its one client authentication method; null: either client secret method. */
  token_endpoint_auth_method?: string | null;
  /** Migration 0020 (X-ID-CC-6): JSON JWK Set of its public keys for `private_key_jwt`. */
  jwks?: string | null;
  /** Migration 0020 (X-ID-CC-6): where its JWK Set is published, instead of `jwks`. */
  jwks_uri?: string | null;
  /** Migration 0025 (X-ID-RES-2): JSON string[] of the API scopes it may ask for with a resource; null is none. */
  api_scopes?: string | null;
  /** Migration 0022 (X-ID-LOGOUT-3): JSON string[] of post-logout redirect URIs; null (older rows) is none. */
  post_logout_redirect_uris?: string | null;
  /** Migration 0021 (X-ID-DEV-8): may use the device authorization grant; null (older rows) is false. */
  device_authorization?: boolean | number | null;
  /** Migration 0023 (X-ID-PAR-5): authorization requests must be pushed; null (older rows) is false. */
  require_pushed_authorization_requests?: boolean | number | null;
  /** Migration 0026 (X-ID-LOGOUT-7): where logout tokens are POSTed; null: none. */
  backchannel_logout_uri?: string | null;
  /** Migration 0026 (X-ID-LOGOUT-7): the application needs `sid` in logout tokens; null (older rows) is false. */
  backchannel_logout_session_required?: boolean | number | null;
  /** Migration 0027 (X-ID-DPOP-8): token requests must carry a DPoP proof; null (older rows) is false. */
  dpop_bound_access_tokens?: boolean | number | null;
}
export const applications = defineTable<ApplicationRow>()("applications", [
  "id",
  "organization_id",
  "name",
  "client_id",
  "client_type",
  "redirect_uris",
  "allowed_scopes",
  "enabled_providers",
  "branding",
  "first_party",
  "created_at",
  "updated_at",
  "enabled",
  "tokens_not_before",
  "allowed_origins",
  "mfa_policy",
  "require_verified_email",
  "client_credentials_enabled",
  "client_credentials_scopes",
  "resources",
  "token_endpoint_auth_method",
  "jwks",
  "jwks_uri",
  "api_scopes",
  "post_logout_redirect_uris",
  "device_authorization",
  "require_pushed_authorization_requests",
  "backchannel_logout_uri",
  "backchannel_logout_session_required",
  "dpop_bound_access_tokens",
]);

export interface ClientSecretRow {
  id: string;
  application_id: string;
  secret_hash: string;
  created_at: string;
  expires_at: string | null;
}
export const clientSecrets = defineTable<ClientSecretRow>()("client_secrets", [
  "id",
  "application_id",
  "secret_hash",
  "created_at",
  "expires_at",
]);

/** The index of browser origins (X-ID-CORS-2): one row per origin an application accepts. */
export interface ApplicationOriginRow {
  origin: string;
  application_id: string;
}
export const applicationOrigins = defineTable<ApplicationOriginRow>()("application_origins", ["origin", "application_id"]);

/** Who is a user of which application: user.updated and user.deleted go to these applications' webhooks. */
export interface ApplicationUserRow {
  application_id: string;
  user_id: string;
  created_at: string;
  /** Migration 0016 (X-ID-UADM-2): when a code was last issued to the user for the application; null: never since. */
  last_sign_in_at?: string | null;
}
export const applicationUsers = defineTable<ApplicationUserRow>()("application_users", [
  "application_id",
  "user_id",
  "created_at",
  "last_sign_in_at",
]);

/** A single sign-on session (X-ID-SESS-1): the cookie carries the id, the row its hash. */
export interface SessionRow {
  id_hash: string;
  user_id: string;
  auth_time: string;
  created_at: string;
  expires_at: string;
  /** Migration 0013 (X-ID-MFA-5): the methods of the sign-in (RFC 8176), space-separated; null: `pwd` (older rows). */
  amr?: string | null;
  /** Migration 0014 (X-ID-ACCT-3): the browser and client address at sign-in, and the last use; null on older rows. */
  user_agent?: string | null;
  ip_address?: string | null;
  last_used_at?: string | null;
}
export const sessions = defineTable<SessionRow>()("oauth_sessions", [
  "id_hash",
  "user_id",
  "auth_time",
  "created_at",
  "expires_at",
  "amr",
  "user_agent",
  "ip_address",
  "last_used_at",
]);

/** A pending authorization request, one per request id, so several tabs can authorize at once. */
export interface RequestRow {
  id: string;
  application_id: string;
  redirect_uri: string;
  scopes: string;
  state: string | null;
  code_challenge: string | null;
  code_challenge_method: string | null;
  nonce: string | null;
  prompt: string | null;
  created_at: string;
  expires_at: string;
  /** Migration 0025 (X-ID-RES-1): the resource (RFC 8707) the authorization request asked for; null: none. */
  resource?: string | null;
}
export const requests = defineTable<RequestRow>()("oauth_requests", [
  "id",
  "application_id",
  "redirect_uri",
  "scopes",
  "state",
  "code_challenge",
  "code_challenge_method",
  "nonce",
  "prompt",
  "created_at",
  "expires_at",
  "resource",
]);

/** A social sign-in in flight: the state towards the upstream (hashed), the request it continues, its sealed secrets. */
export interface SocialStateRow {
  state_hash: string;
  request_id: string;
  provider: string;
  secrets: string;
  created_at: string;
  expires_at: string;
}
export const socialStates = defineTable<SocialStateRow>()("oauth_social_states", [
  "state_hash",
  "request_id",
  "provider",
  "secrets",
  "created_at",
  "expires_at",
]);

/** The scopes a user has granted an application (X-ID-AZ-2). */
export interface ConsentRow {
  user_id: string;
  application_id: string;
  scopes: string;
  updated_at: string;
}
export const consents = defineTable<ConsentRow>()("oauth_consents", ["user_id", "application_id", "scopes", "updated_at"]);

export interface CodeRow {
  code_hash: string;
  grant_id: string;
  application_id: string;
  user_id: string;
  redirect_uri: string;
  scopes: string;
  code_challenge: string | null;
  code_challenge_method: string | null;
  nonce: string | null;
  auth_time: string;
  created_at: string;
  expires_at: string;
  consumed_at: string | null;
  /** Migration 0013 (X-ID-MFA-5): the session's methods, for the ID token's `amr` and `acr`; null: `pwd`. */
  amr: string | null;
  /** Migration 0025 (X-ID-RES-1): the resource (RFC 8707) the authorization request asked for; null: none. */
  resource?: string | null;
  /** Migration 0026 (X-ID-LOGOUT-6): the session id of the sign-in, for the ID token's `sid`; null on older rows. */
  sid?: string | null;
}
export const codes = defineTable<CodeRow>()("oauth_codes", [
  "code_hash",
  "grant_id",
  "application_id",
  "user_id",
  "redirect_uri",
  "scopes",
  "code_challenge",
  "code_challenge_method",
  "nonce",
  "auth_time",
  "created_at",
  "expires_at",
  "consumed_at",
  "amr",
  "resource",
  "sid",
]);

/**
 * What one code exchange granted: the refresh-token family and the access tokens issued from it.
 * `ends_at`: after it nothing issued from the grant is live (domain/oauth/grant-end.ts); the
 * retention purge counts from it.
 */
export interface GrantRow {
  id: string;
  application_id: string;
  user_id: string;
  scopes: string;
  auth_time: string;
  created_at: string;
  revoked_at: string | null;
  ends_at: string | null;
  /** Migration 0013 (X-ID-MFA-5): the methods of the sign-in the grant came from; null or absent: `pwd`. */
  amr?: string | null;
  /** Migration 0025 (X-ID-RES-1): the resource (RFC 8707) the authorization request asked for; null: none. */
  resource?: string | null;
  /** Migration 0024 (X-ID-DPOP-4): the key thumbprint a public client's refresh tokens are bound to; null: unbound. */
  dpop_jkt?: string | null;
  /** Migration 0026 (X-ID-LOGOUT-6): the session id its code carried; null: the ID tokens of its refreshes carry none. */
  sid?: string | null;
}
export const grants = defineTable<GrantRow>()("oauth_grants", [
  "id",
  "application_id",
  "user_id",
  "scopes",
  "auth_time",
  "created_at",
  "revoked_at",
  "ends_at",
  "amr",
  "resource",
  "dpop_jkt",
  "sid",
]);

export interface RefreshRow {
  id: string;
  token_hash: string;
  grant_id: string;
  parent_id: string | null;
  created_at: string;
  expires_at: string;
  used_at: string | null;
  child_id: string | null;
  rotation_answer: string | null;
}
export const refreshTokens = defineTable<RefreshRow>()("oauth_refresh_tokens", [
  "id",
  "token_hash",
  "grant_id",
  "parent_id",
  "created_at",
  "expires_at",
  "used_at",
  "child_id",
  "rotation_answer",
]);

/** An access token revoked alone (RFC 7009), kept until it would have expired. */
export interface RevokedAccessTokenRow {
  jti: string;
  expires_at: string;
}
export const revokedAccessTokens = defineTable<RevokedAccessTokenRow>()("oauth_revoked_access_tokens", ["jti", "expires_at"]);
/** A user an admin disabled for the organization (X-ID-UADM-3): none of its applications signs them in. */
export interface OrganizationUserBlockRow {
  organization_id: string;
  user_id: string;
  created_at: string;
}
export const organizationUserBlocks = defineTable<OrganizationUserBlockRow>()("organization_user_blocks", [
  "organization_id",
  "user_id",
  "created_at",
]);

/**
 * One message identity sends (X-ID-MAIL-1), rendered when queued. `pending` rows are due at
 * `next_attempt_at` and leased to one dispatcher at a time; `sent` and `failed` rows are finished
 * (`finished_at`) and purged by the retention rule. The bodies of a sent row are cleared unless the
 * local mailbox keeps them (X-ID-MAIL-5): they may carry a single-use link.
 */
export interface MailOutboxRow {
  id: string;
  template: string;
  locale: string;
  application_id: string | null;
  recipient: string;
  subject: string;
  text_body: string | null;
  html_body: string | null;
  status: "pending" | "sent" | "failed";
  attempts: number;
  next_attempt_at: string | null;
  lease_token: string | null;
  lease_expires_at: string | null;
  last_error: string | null;
  created_at: string;
  finished_at: string | null;
}
export const mailOutbox = defineTable<MailOutboxRow>()("mail_outbox", [
  "id",
  "template",
  "locale",
  "application_id",
  "recipient",
  "subject",
  "text_body",
  "html_body",
  "status",
  "attempts",
  "next_attempt_at",
  "lease_token",
  "lease_expires_at",
  "last_error",
  "created_at",
  "finished_at",
]);

/**
 * A second factor of a user (X-ID-MFA-1): `kind` says which (`totp`; a passkey would be another
 * kind), `secret` is sealed, never plain. The id names the factor (`totp:<user id>`: one TOTP per
 * user). `last_step`: the last TOTP time step accepted, so a code is accepted once (X-ID-MFA-1).
 */
export interface FactorRow {
  id: string;
  user_id: string;
  kind: string;
  secret: string;
  last_step: number | string | null;
  created_at: string;
  confirmed_at: string | null;
  last_used_at: string | null;
}
export const factors = defineTable<FactorRow>()("identity_factors", [
  "id",
  "user_id",
  "kind",
  "secret",
  "last_step",
  "created_at",
  "confirmed_at",
  "last_used_at",
]);

/** A recovery code (X-ID-MFA-3): its SHA-256 only; `used_at` records its one use. */
export interface RecoveryCodeRow {
  code_hash: string;
  user_id: string;
  created_at: string;
  used_at: string | null;
}
export const recoveryCodes = defineTable<RecoveryCodeRow>()("identity_recovery_codes", ["code_hash", "user_id", "created_at", "used_at"]);

/** A sign-in between its first and second factor (X-ID-MFA-4): the cookie carries the id, the row its hash. */
export interface FactorChallengeRow {
  id_hash: string;
  user_id: string;
  request_id: string;
  amr: string;
  created_at: string;
  expires_at: string;
}
export const factorChallenges = defineTable<FactorChallengeRow>()("identity_factor_challenges", [
  "id_hash",
  "user_id",
  "request_id",
  "amr",
  "created_at",
  "expires_at",
]);

/**
 * One security event of the audit log (migration 0015). No foreign keys: the log outlives the
 * users, applications and organizations it names. `details` is a small JSON object of facts
 * (reason codes, field names), never a secret.
 */
export interface AuditEventRow {
  id: string;
  type: string;
  occurred_at: string;
  actor_type: string;
  actor_id: string | null;
  user_id: string | null;
  organization_id: string | null;
  application_id: string | null;
  client_address: string | null;
  user_agent: string | null;
  details: string;
}
export const auditEvents = defineTable<AuditEventRow>()("audit_events", [
  "id",
  "type",
  "occurred_at",
  "actor_type",
  "actor_id",
  "user_id",
  "organization_id",
  "application_id",
  "client_address",
  "user_agent",
  "details",
]);

/**
 * One request of a password reset link (X-ID-RST-1..7). `user_id` is null when the address has no
 * account to reset (the row is written anyway: the same work either way, and the limits count it).
 * A link is usable while `used_at` and `ended_at` are null and `expires_at` is ahead.
 */
export interface PasswordResetRow {
  id: string;
  token_hash: string;
  user_id: string | null;
  email_key: string;
  client_address: string;
  application_id: string | null;
  return_to: string | null;
  created_at: string;
  expires_at: string;
  used_at: string | null;
  ended_at: string | null;
}
export const passwordResets = defineTable<PasswordResetRow>()("password_resets", [
  "id",
  "token_hash",
  "user_id",
  "email_key",
  "client_address",
  "application_id",
  "return_to",
  "created_at",
  "expires_at",
  "used_at",
  "ended_at",
]);

/**
 * One mailed link that proves an address (X-ID-EVF-1..4): the user's current address
 * (`address`) or the new one of an email change (`change`). Only the token's storage key is kept;
 * `consumed_at` is set once, by a conditional update, when the link is used or superseded.
 */
export interface EmailVerificationRow {
  token_hash: string;
  user_id: string;
  email: string;
  purpose: "address" | "change";
  application_id: string | null;
  /** Where the page sends the browser after verifying: the authorization that stopped for it (X-ID-EVF-5). */
  return_to: string | null;
  created_at: string;
  expires_at: string;
  consumed_at: string | null;
}
export const emailVerifications = defineTable<EmailVerificationRow>()("email_verifications", [
  "token_hash",
  "user_id",
  "email",
  "purpose",
  "application_id",
  "return_to",
  "created_at",
  "expires_at",
  "consumed_at",
]);

/** A user's passkey (WebAuthn credential, X-ID-PK-1): what verifying its assertions needs, and what the account page shows. */
export interface PasskeyRow {
  id: string;
  credential_id: string;
  user_id: string;
  name: string;
  public_key: string;
  counter: number | string;
  transports: string;
  device_type: string;
  backed_up: boolean | number;
  created_at: string;
  last_used_at: string | null;
}
export const passkeys = defineTable<PasskeyRow>()("passkeys", [
  "id",
  "credential_id",
  "user_id",
  "name",
  "public_key",
  "counter",
  "transports",
  "device_type",
  "backed_up",
  "created_at",
  "last_used_at",
]);

/** A WebAuthn challenge (X-ID-PK-2): single-use, expiring, bound to a session or an authorization request. */
export interface PasskeyChallengeRow {
  challenge: string;
  purpose: string;
  binding: string;
  user_id: string | null;
  expires_at: string;
  consumed_at: string | null;
}
export const passkeyChallenges = defineTable<PasskeyChallengeRow>()("passkey_challenges", [
  "challenge",
  "purpose",
  "binding",
  "user_id",
  "expires_at",
  "consumed_at",
]);
/** Migration 0020 (X-ID-CC-7): a `private_key_jwt` assertion's `jti` (hashed), refused again until `expires_at`. */
export interface ClientAssertionJtiRow {
  /** SHA-256 of the client id and the assertion's `jti`, base64url. */
  jti: string;
  application_id: string;
  expires_at: string;
}
export const clientAssertionJtis = defineTable<ClientAssertionJtiRow>()("client_assertion_jtis", ["jti", "application_id", "expires_at"]);

/** Migration 0021 (X-ID-DEV-1..6): one device authorization, its codes as hashes only. */
export interface DeviceAuthorizationRow {
  id: string;
  device_code_hash: string;
  user_code_hash: string;
  application_id: string;
  scopes: string;
  created_at: string;
  expires_at: string;
  interval_seconds: number;
  last_polled_at: string | null;
  status: "pending" | "approved" | "denied" | "redeemed";
  user_id: string | null;
  auth_time: string | null;
  amr: string | null;
  decided_at: string | null;
  /** Migration 0028 (X-ID-DEV-11): the resource (RFC 8707) the device asked for; null or absent: none. */
  resource?: string | null;
}
export const deviceAuthorizations = defineTable<DeviceAuthorizationRow>()("device_authorizations", [
  "id",
  "device_code_hash",
  "user_code_hash",
  "application_id",
  "scopes",
  "created_at",
  "expires_at",
  "interval_seconds",
  "last_polled_at",
  "status",
  "user_id",
  "auth_time",
  "amr",
  "decided_at",
  "resource",
]);

/** Migration 0021 (X-ID-DEV-4): one wrong user code, by who typed it. */
export interface DeviceCodeGuessRow {
  id: number;
  subject: string;
  at: string;
}
export const deviceCodeGuesses = defineTable<DeviceCodeGuessRow>()("device_code_guesses", ["id", "subject", "at"]);

/**
 * A pushed authorization request (RFC 9126): the parameters a client sent to `POST /oauth/par`,
 * already validated, under the SHA-256 of the `request_uri` handed back; single use, bound to
 * the client that pushed it.
 */
export interface PushedRequestRow {
  request_uri_hash: string;
  application_id: string;
  /** JSON object of the authorization request's parameters, as pushed. */
  parameters: string;
  created_at: string;
  expires_at: string;
  consumed_at: string | null;
}
export const pushedRequests = defineTable<PushedRequestRow>()("oauth_pushed_requests", [
  "request_uri_hash",
  "application_id",
  "parameters",
  "created_at",
  "expires_at",
  "consumed_at",
]);

/** A DPoP proof accepted within its freshness window (X-ID-DPOP-2): its key is a hash, never the jti itself. */
export interface DpopProofRow {
  proof_key: string;
  expires_at: string;
}
export const dpopProofs = defineTable<DpopProofRow>()("oauth_dpop_proofs", ["proof_key", "expires_at"]);

/** An application a session signed into (X-ID-LOGOUT-8): it gets a logout token when the session ends. */
export interface SessionApplicationRow {
  session_id_hash: string;
  application_id: string;
  created_at: string;
}
export const sessionApplications = defineTable<SessionApplicationRow>()("oauth_session_applications", [
  "session_id_hash",
  "application_id",
  "created_at",
]);

/** A logout token to send (X-ID-LOGOUT-10): the outbox row, leased by a dispatcher like the mail outbox's. */
export interface BackchannelLogoutRow {
  id: string;
  application_id: string;
  user_id: string;
  sid: string;
  status: "pending" | "sent" | "failed";
  attempts: number;
  next_attempt_at: string | null;
  lease_token: string | null;
  lease_expires_at: string | null;
  last_error: string | null;
  created_at: string;
  finished_at: string | null;
}
export const backchannelLogouts = defineTable<BackchannelLogoutRow>()("backchannel_logouts", [
  "id",
  "application_id",
  "user_id",
  "sid",
  "status",
  "attempts",
  "next_attempt_at",
  "lease_token",
  "lease_expires_at",
  "last_error",
  "created_at",
  "finished_at",
]);

/** Every table above: what the schema test compares with the migrated database. */
export const identityTables = [
  organizations,
  organizationAdmins,
  users,
  userIdentities,
  registrationAttempts,
  applications,
  clientSecrets,
  applicationOrigins,
  applicationUsers,
  sessions,
  requests,
  socialStates,
  consents,
  codes,
  grants,
  refreshTokens,
  revokedAccessTokens,
  mailOutbox,
  factors,
  recoveryCodes,
  factorChallenges,
  auditEvents,
  organizationUserBlocks,
  passwordResets,
  emailVerifications,
  passkeys,
  passkeyChallenges,
  clientAssertionJtis,
  deviceAuthorizations,
  deviceCodeGuesses,
  pushedRequests,
  dpopProofs,
  sessionApplications,
  backchannelLogouts,
];
