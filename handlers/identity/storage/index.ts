/**
 * The identity service's storage: each store's implementation, chosen once for the database the
 * service opened (as svix chooses its queue backends). The one place in identity that looks at the
 * dialect; the domain sees each store's interface only (ADR 0002).
 */
import type { Knex } from "knex";
import type { SignInThrottleStore } from "../../../server/security/sign-in-throttle.ts";
import { knexSignInThrottleStore, postgresSignInThrottleStore } from "../../../server/security/sign-in-throttle-store.ts";
import { dialectOf } from "../../../server/storage/dialect.ts";
import { type Transactor, transactor } from "../../../server/storage/transaction.ts";
import type { ApplicationStore } from "./applications.ts";
import { type AuditEventStore, knexAuditEvents } from "./audit-events.ts";
import { type AuthorizationRequestStore, knexAuthorizationRequests } from "./authorization-requests.ts";
import { type ConsentStore, knexConsents } from "./consents.ts";
import type { GrantStore } from "./grants.ts";
import { knexOrganizations, type OrganizationStore } from "./organizations.ts";
import { postgresApplications } from "./postgres/applications.ts";
import { postgresGrants } from "./postgres/grants.ts";
import { knexRegistrationAttempts, type RegistrationAttemptStore } from "./registration-attempts.ts";
import { knexSessions, type SessionStore } from "./sessions.ts";
import { sqliteApplications } from "./sqlite/applications.ts";
import { sqliteGrants } from "./sqlite/grants.ts";
import { knexUsers, type UserStore } from "./users.ts";
import { knexMailOutbox, type MailOutboxStore } from "./mail-outbox.ts";
import { postgresMailOutbox } from "./postgres/mail-outbox.ts";
import { knexUserGrants, type UserGrantStore } from "./user-grants.ts";
import { type FactorStore, knexFactors } from "./factors.ts";
import { knexOrganizationUsers, type OrganizationUserStore } from "./organization-users.ts";
import { knexPasswordResets, type PasswordResetStore } from "./password-resets.ts";
import { type EmailVerificationStore, knexEmailVerifications } from "./email-verifications.ts";
import { knexPasskeys, type PasskeyStore } from "./passkeys.ts";
import { type ClientAssertionStore, knexClientAssertions } from "./client-assertions.ts";
import { type DeviceAuthorizationStore, knexDeviceAuthorizations } from "./device-authorizations.ts";
import { knexPushedRequests, type PushedRequestStore } from "./pushed-requests.ts";
import { type DpopProofStore, knexDpopProofs } from "./dpop-proofs.ts";
import { type BackchannelLogoutStore, knexBackchannelLogouts } from "./backchannel-logouts.ts";

/**
 * The identity database's schema steps, in order: what the service opens its database with
 * (`openDatabase` runs those not yet applied), and what tools that use the tables without the
 * service open it with (`npm run migrate`, the benchmarks' bulk seeding).
 */
export { migrations } from "./migrations/index.ts";
/** What the service's retention purge deletes, table by table (`createPurger` runs them). */
export { identityRetentionRules } from "./retention-rules.ts";

export interface IdentityStorage {
  /** One transaction over any of the stores below (each operation takes the `Tx`). */
  transaction: Transactor;
  organizations: OrganizationStore;
  users: UserStore;
  registrationAttempts: RegistrationAttemptStore;
  applications: ApplicationStore;
  sessions: SessionStore;
  authorizationRequests: AuthorizationRequestStore;
  consents: ConsentStore;
  grants: GrantStore;
  /** Where the password sign-in throttle counts attempts (X-ID-AZ-3, X-ID-AZ-4); the retention purge removes old rows. */
  signInThrottle: SignInThrottleStore;
  /** The messages identity sends, queued in the transaction of their cause (X-ID-MAIL-1). */
  mailOutbox: MailOutboxStore;
  /** The user's grants per application, and their revocation, for the account page (X-ID-ACCT-2). */
  userGrants: UserGrantStore;
  /** Second factors, recovery codes, second-factor steps in flight, the policy (X-ID-MFA-*). */
  factors: FactorStore;
  /** The audit log's security events (X-ID-AUD-1); the retention purge removes old ones. */
  auditEvents: AuditEventStore;
  /** The organizations' relation to their users: who they are, blocks, ending access (X-ID-UADM-*). */
  organizationUsers: OrganizationUserStore;
  /** Requests of password reset links, their hashed tokens and the limits' counts (X-ID-RST-1..7). */
  passwordResets: PasswordResetStore;
  /** The mailed links that prove an email address (X-ID-EVF-1..4). */
  emailVerifications: EmailVerificationStore;
  /** Users' passkeys and the challenges of their ceremonies (X-ID-PK-1, X-ID-PK-2). */
  passkeys: PasskeyStore;
  /** The ids of private_key_jwt assertions already used (X-ID-CC-7). */
  clientAssertions: ClientAssertionStore;
  /** Device authorizations and the wrong user codes typed for them (X-ID-DEV-1..6). */
  deviceAuthorizations: DeviceAuthorizationStore;
  /** Pushed authorization requests (RFC 9126): hashed, single use, bound to their client (X-ID-PAR-*). */
  pushedRequests: PushedRequestStore;
  /** DPoP proofs accepted within their freshness window: a replay is refused (X-ID-DPOP-2). */
  dpopProofs: DpopProofStore;
  /** The applications each session signed into, and the logout tokens to send them (X-ID-LOGOUT-8, X-ID-LOGOUT-10). */
  backchannelLogouts: BackchannelLogoutStore;
}

const THROTTLE_TABLES = { failures: "oauth_signin_failures", knownAddresses: "oauth_signin_known_addresses" };

export function createIdentityStorage(db: Knex): IdentityStorage {
  const sqlite = dialectOf(db) === "sqlite";
  return {
    transaction: transactor(db),
    organizations: knexOrganizations(db),
    users: knexUsers(db),
    registrationAttempts: knexRegistrationAttempts(db),
    applications: sqlite ? sqliteApplications(db) : postgresApplications(db),
    sessions: knexSessions(db),
    authorizationRequests: knexAuthorizationRequests(db),
    consents: knexConsents(db),
    grants: sqlite ? sqliteGrants(db) : postgresGrants(db),
    signInThrottle: sqlite ? knexSignInThrottleStore(db, THROTTLE_TABLES) : postgresSignInThrottleStore(db, THROTTLE_TABLES),
    mailOutbox: sqlite ? knexMailOutbox(db) : postgresMailOutbox(db),
    userGrants: knexUserGrants(db),
    factors: knexFactors(db),
    auditEvents: knexAuditEvents(db),
    organizationUsers: knexOrganizationUsers(db),
    passwordResets: knexPasswordResets(db),
    emailVerifications: knexEmailVerifications(db),
    passkeys: knexPasskeys(db),
    clientAssertions: knexClientAssertions(db),
    deviceAuthorizations: knexDeviceAuthorizations(db),
    pushedRequests: knexPushedRequests(db),
    dpopProofs: knexDpopProofs(db),
    backchannelLogouts: knexBackchannelLogouts(db),
  };
}
