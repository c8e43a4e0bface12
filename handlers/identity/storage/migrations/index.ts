/**
 * Schema of the identity service, one migration module per area so each area owns its tables:
 * core (organizations, users, applications), oauth (sessions, requests, codes, tokens) and
 * webhooks (the delivery engine's outbox, deliveries and attempts); then growth: the indexes and
 * counters that keep the hot queries flat as tables reach millions of rows; then the state of an
 * application (enabled, and since when its older tokens are ended); then the addresses each
 * account signed in from (the sign-in throttle); then the browser origins of applications (CORS);
 * then the ring of signing keys an operator rotates; then indexes for the cascades of application
 * and organization deletions, and the end of each grant (what its retention counts from); then the
 * webhook attempt counter's triggers on PostgreSQL, locking counters in key order; then room
 * on the pages of webhook deliveries for their leases (PostgreSQL); then the mail outbox; second
 * factors; what the account page shows of each session (its device, address and last use); the
 * audit log; the organizations' blocks of their users; password resets; then the links of email
 * verification and the application setting that requires a verified address; passkeys and their
 * challenges.
 */
import type { Migration } from "../../../../server/storage/db.ts";
import { core } from "./0001-core.ts";
import { oauth } from "./0002-oauth.ts";
import { webhooks } from "./0003-webhooks.ts";
import { growth } from "./0004-growth.ts";
import { applicationState } from "./0005-application-state.ts";
import { signInThrottle } from "./0006-sign-in-throttle.ts";
import { browserOrigins } from "./0007-browser-origins.ts";
import { signingKeyRing } from "./0008-signing-key-ring.ts";
import { cascadesAndGrantEnds } from "./0009-cascades-and-grant-ends.ts";
import { counterLockOrder } from "./0010-counter-lock-order.ts";
import { roomForLeases } from "./0011-room-for-leases.ts";
import { mailOutbox } from "./0012-mail-outbox.ts";
import { secondFactor } from "./0013-second-factor.ts";
import { sessionDevices } from "./0014-session-devices.ts";
import { auditLog } from "./0015-audit-log.ts";
import { organizationUsers } from "./0016-organization-users.ts";
import { passwordResets } from "./0017-password-resets.ts";
import { emailVerification } from "./0018-email-verification.ts";
import { passkeys } from "./0019-passkeys.ts";
import { clientCredentials } from "./0020-client-credentials.ts";
import { deviceAuthorization } from "./0021-device-authorization.ts";
import { logout } from "./0022-logout.ts";
import { pushedRequests } from "./0023-pushed-requests.ts";
import { dpop } from "./0024-dpop.ts";
import { resourceIndicators } from "./0025-resource-indicators.ts";
import { backchannelLogout } from "./0026-backchannel-logout.ts";
import { dpopBoundAccessTokens } from "./0027-dpop-bound-access-tokens.ts";
import { deviceResource } from "./0028-device-resource.ts";

export const migrations: Record<string, Migration> = {
  "0001_core": core,
  "0002_oauth": oauth,
  "0003_webhooks": webhooks,
  "0004_growth": growth,
  "0005_application_state": applicationState,
  "0006_sign_in_throttle": signInThrottle,
  "0007_browser_origins": browserOrigins,
  "0008_signing_key_ring": signingKeyRing,
  "0009_cascades_and_grant_ends": cascadesAndGrantEnds,
  "0010_counter_lock_order": counterLockOrder,
  "0011_room_for_leases": roomForLeases,
  "0012_mail_outbox": mailOutbox,
  "0013_second_factor": secondFactor,
  "0014_session_devices": sessionDevices,
  "0015_audit_log": auditLog,
  "0016_organization_users": organizationUsers,
  "0017_password_resets": passwordResets,
  "0018_email_verification": emailVerification,
  "0019_passkeys": passkeys,
  "0020_client_credentials": clientCredentials,
  "0021_device_authorization": deviceAuthorization,
  "0022_logout": logout,
  "0023_pushed_requests": pushedRequests,
  "0024_dpop": dpop,
  "0025_resource_indicators": resourceIndicators,
  "0026_backchannel_logout": backchannelLogout,
  "0027_dpop_bound_access_tokens": dpopBoundAccessTokens,
  "0028_device_resource": deviceResource,
};
