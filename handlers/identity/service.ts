/** Assembles the identity service: database, keys, the three areas, handlers and the Koa app. */
import type { Logger } from "pino";
import type { Clock } from "../../server/clock.ts";
import { signInPolicyOf, webhookSettingsOf } from "../../server/config.ts";
import { definitionPath } from "../../server/definitions.ts";
import { createServiceApp, platformAppOptions } from "../../server/http/app.ts";
import { corsMiddleware } from "../../server/http/cors.ts";
import { platformHandlers } from "../../server/http/platform-handlers.ts";
import { createServiceMetrics, webhookMetrics } from "../../server/observability/metrics.ts";
import { createAddressPolicy, createWebhookStorage, loadWebhookSealingKey, pendingDeliveries } from "../../server/webhooks/index.ts";
import { createGuardedJsonFetcher } from "../../server/outbound/guarded-json.ts";
import { createReadiness } from "../../server/lifecycle.ts";
import { openKeyRing } from "../../server/keys/ring.ts";
import { keyEncryption } from "../../server/security/key-encryption.ts";
import { createWorkerSigner } from "../../server/security/jwt-signer.ts";
import { closeAndRethrow, openDatabase } from "../../server/storage/db.ts";
import { createPurger, PURGE_PAUSE_MS, scheduleRetention } from "../../server/storage/retention.ts";
import { accountPagesHandlers, accountPagesProblemMappers } from "./account-pages.ts";
import { applicationsHandlers } from "./applications.ts";
import { identityListener, identityRetentionOf, type IdentityServiceConfig } from "./config.ts";
import { tokenGrantMetrics } from "./metrics.ts";
import { authorizeHandlers, authorizeProblemMappers } from "./authorize.ts";
import { identityCorsPolicy } from "./cors.ts";
import { dashboardHandlers } from "./dashboard.ts";
import { dashboardScript } from "./views/dashboard.ts";
import type { IdentityDeps, IdentityHandlers, IdentityPrincipal } from "./identity-handlers.ts";
import { discoveryHandlers } from "./discovery.ts";
import { createAccessTokens, REALM } from "./domain/access-tokens.ts";
import { createAccountsArea } from "./domain/accounts/accounts-area.ts";
import { createAudit } from "./domain/audit.ts";
import { createAuditWebhooks } from "./domain/audit-webhooks.ts";
import { ensureDashboardClient } from "./domain/dashboard-client.ts";
import type { IdentityContext } from "./domain/context.ts";
import { loadClientSecretKey } from "./storage/client-secret-key.ts";
import { createOAuthArea } from "./domain/oauth/oauth-area.ts";
import { createWebhooksArea, type WebhookRow } from "./domain/webhooks/webhooks-area.ts";
import { organizationsHandlers } from "./organizations.ts";
import { providersHandlers } from "./providers.ts";
import { socialHandlers, socialProblemMappers } from "./social.ts";
import { migrations } from "./storage/migrations/index.ts";
import { createIdentityStorage } from "./storage/index.ts";
import { identityRetentionRules } from "./storage/retention-rules.ts";
import { identityKeyPurposes } from "./signing-keys.ts";
import { pushedRequestHandlers, pushedRequestProblemMappers, tokenHandlers, tokenProblemMappers } from "./token.ts";
import { userinfoHandlers } from "./userinfo.ts";
import { usersHandlers } from "./users.ts";
import { webhooksHandlers } from "./webhooks.ts";
import { identityMailOf } from "./config.ts";
import { createMailArea } from "./domain/mail/mail-area.ts";
import { createMailTransport } from "./mail/transports/index.ts";
import { createMailRenderer } from "./mail/templates.ts";
import { mailboxHandlers, mailboxProblemMappers } from "./mailbox.ts";
import { ensureAccountClient } from "./domain/account-client.ts";
import { accountPageHandlers, accountPageProblemMappers } from "./account-page.ts";
import { createFactorsArea } from "./domain/factors/factors-area.ts";
import { secondFactorHandlers, secondFactorProblemMappers } from "./second-factor.ts";
import { accountSecurityHandlers, accountSecurityProblemMappers } from "./account-security.ts";
import { deviceHandlers, deviceProblemMappers } from "./device.ts";
import { auditEventsHandlers } from "./audit-events.ts";
import { organizationUsersHandlers } from "./organization-users.ts";
import { passwordResetHandlers, passwordResetProblemMappers } from "./password-reset.ts";
import { verifyEmailPagesHandlers, verifyEmailPagesProblemMappers } from "./verify-email-pages.ts";
import { createPasskeysArea } from "./domain/passkeys/passkeys-area.ts";
import { relyingPartyOf } from "./domain/passkeys/relying-party.ts";
import { passkeyHandlers, passkeyProblemMappers } from "./passkeys.ts";
import { passkeysScript } from "./views/passkeys-script.ts";
import { endSessionHandlers, endSessionProblemMappers } from "./end-session.ts";
import { createTokenPresentation } from "./domain/dpop/presentation.ts";
import type { RequestHeaders } from "../../server/http/handler-types.ts";
import { createSender } from "../../server/webhooks/sender.ts";
import { createBackchannelDelivery } from "./domain/oauth/backchannel-delivery.ts";
import { createBackchannelLogout } from "./domain/oauth/backchannel-logout.ts";

export async function createIdentityService(config: IdentityServiceConfig, clock: Clock, logger: Logger) {
  const log = logger.child({ service: "identity" });
  const db = await openDatabase({ service: "identity", databaseUrl: config.DATABASE_URL, dataDir: config.DATA_DIR, migrations });
  const storage = createIdentityStorage(db);
  const issuer = identityListener(config).publicUrl;
  const [purpose] = identityKeyPurposes();
  const encryption = keyEncryption(config.KEY_ENCRYPTION_KEY, config.KEY_ENCRYPTION_KEY_PREVIOUS);
  const keys = await openKeyRing({
    ...purpose!,
    db,
    clock,
    encryption,
    refreshSeconds: config.SIGNING_KEY_REFRESH_SECONDS,
    onRefreshError: (err) => log.warn({ err }, "reading the signing keys failed; the keys read before still sign and verify"),
  }).catch(closeAndRethrow(db));
  // One signing thread for the service's JWTs (access and ID tokens), off the event loop (ADR 0006).
  const signer = createWorkerSigner();
  const accessTokens = createAccessTokens({ issuer, keys, signer, clock, organizations: storage.organizations, grants: storage.grants });
  // The dashboard's script is bundled now, not at its first request: a build that fails stops the start.
  await dashboardScript().catch(closeAndRethrow(db));
  await ensureDashboardClient(storage.applications, issuer, clock);
  // The account page's own client (X-ID-ACCT-1), with every configured social provider.
  const socialProviderIds = config.IDENTITY_SOCIAL_PROVIDERS.map((p) => p.id);
  await ensureAccountClient(storage.applications, issuer, socialProviderIds, clock);

  const mail = createMailArea({ clock, logger: log, storage }, mailSettingsOf(config, log));
  // The security events go to webhooks too (X-ID-AUD-7); the webhook area is made below, before any event is recorded.
  const auditWebhooks = createAuditWebhooks({
    publish: (trx, event) => webhooks.sink.publish(trx, event),
    applications: storage.applications,
  });
  const audit = createAudit({
    store: storage.auditEvents,
    applications: storage.applications,
    clock,
    webhooks: auditWebhooks,
    transaction: storage.transaction,
  });
  // Back-Channel Logout (X-ID-LOGOUT-8..10): logout tokens go out as webhooks do, under the same SSRF guard and time limit.
  const backchannelSettings = webhookSettingsOf(config);
  const backchannel = createBackchannelDelivery({
    clock,
    logger: log,
    store: storage.backchannelLogouts,
    issuer,
    accessTokens,
    sender: createSender({
      policy: createAddressPolicy(backchannelSettings.allowPrivateTargets),
      timeoutMs: backchannelSettings.timeoutMs,
      connections: 4,
      timers: clock,
    }),
    pollIntervalMs: backchannelSettings.pollIntervalMs,
    leaseMs: backchannelSettings.leaseMs,
  });
  const logouts = createBackchannelLogout({ store: storage.backchannelLogouts, clock, wake: backchannel.wake });
  const metrics = createServiceMetrics();
  const counted = { webhooks: webhookMetrics(metrics, () => pendingDeliveries(db), clock), tokenGrants: tokenGrantMetrics(metrics) };
  const base = {
    clock,
    logger: log,
    storage,
    issuer,
    keys,
    clientSecretKey: await loadClientSecretKey(db, clock, encryption),
    webhookSealingKey: await loadWebhookSealingKey(db, clock.now(), encryption),
    accessTokens,
    metrics: counted,
    mail: mail.queue,
    audit,
    logouts,
  };
  const webhooks = createWebhooksArea(
    base,
    createWebhookStorage<WebhookRow>(db, { table: "webhooks", scopeColumn: "application_id" }),
    webhookSettingsOf(config),
  );
  const ctx: IdentityContext = { ...base, events: webhooks.sink };
  // The domain areas receive the stores (ctx.storage); only this wiring holds the database handle.
  const accounts = createAccountsArea(ctx, { socialProviders: config.IDENTITY_SOCIAL_PROVIDERS });
  const oauthSettings = {
    tokenKeys: config.IDENTITY_TOKEN_KEYS,
    signIn: signInPolicyOf(config),
    // A client's jwksUri is fetched under the same address rules as webhook deliveries (X-ID-CC-6).
    fetchJwks: createGuardedJsonFetcher({ policy: createAddressPolicy(webhookSettingsOf(config).allowPrivateTargets) }),
    pushedRequests: {
      lifetimeSeconds: config.IDENTITY_PAR_LIFETIME_SECONDS,
      requiredForAll: config.IDENTITY_REQUIRE_PUSHED_AUTHORIZATION_REQUESTS,
    },
    dpopNonceSeconds: config.IDENTITY_DPOP_NONCE_SECONDS,
  };

  const oauth = createOAuthArea(ctx, accounts, oauthSettings);
  const factors = createFactorsArea(ctx, accounts, { signIn: oauthSettings.signIn });
  const passkeys = createPasskeysArea({
    store: storage.passkeys,
    clock,
    logger: log,
    relyingParty: relyingPartyOf(issuer),
    transaction: storage.transaction,
    audit,
  });
  const deps: IdentityDeps = { accounts, oauth, webhooks, mail, factors, audit, passkeys };
  // The passkey pages' script is bundled now, as the dashboard's: a build that fails stops the start.
  await passkeysScript().catch(closeAndRethrow(db));

  // Shutdown (server/lifecycle.ts) turns it off, so that /ready answers 503 while requests drain.
  const readiness = createReadiness();
  const handlers: IdentityHandlers = {
    // The API reference is X-ID-DOC-1 here.
    ...platformHandlers({
      service: "identity",
      db,
      clock,
      readiness,
      metrics,
      metricsToken: config.METRICS_TOKEN,
      reference: { title: "Identity Service", definitionPath: definitionPath("identity") },
    }),
    ...authorizeHandlers,
    ...accountPagesHandlers,
    ...socialHandlers,
    ...tokenHandlers,
    ...userinfoHandlers,
    ...discoveryHandlers,
    ...usersHandlers,
    ...organizationsHandlers,
    ...applicationsHandlers,
    ...providersHandlers,
    ...dashboardHandlers,
    ...webhooksHandlers,
    ...mailboxHandlers,
    ...accountPageHandlers,
    ...secondFactorHandlers,
    ...accountSecurityHandlers,
    ...auditEventsHandlers,
    ...organizationUsersHandlers,
    ...passwordResetHandlers,
    ...verifyEmailPagesHandlers,
    ...passkeyHandlers,
    ...endSessionHandlers,
    ...deviceHandlers,
    ...pushedRequestHandlers,
  };

  const presentation = createTokenPresentation({ accessTokens, proofs: oauth.dpop });
  const presentedRequest = (headers: RequestHeaders, method: string, path: string) => ({
    authorization: headers.authorization,
    dpop: headers.dpop,
    method,
    url: `${issuer}${path}`,
  });
  const app = await createServiceApp<IdentityDeps, IdentityPrincipal>({
    name: "identity",
    definition: definitionPath("identity"),
    handlers,
    securityHandlers: {
      // Bearer or DPoP-bound tokens (X-ID-DPOP-5): the proof names the operation's URL at the issuer.
      UserAuth: ({ headers, method, path }) => presentation.authenticateUser(presentedRequest(headers, method, path)),
      AdminAuth: ({ headers, method, path }) => presentation.authenticateAdmin(presentedRequest(headers, method, path)),
      SessionCookie: ({ headers }) => oauth.authenticateSession(headers),
    },
    realm: REALM,
    deps,
    logger: log,
    ...platformAppOptions(config),
    metrics,
    publicUrl: issuer,
    // Browser clients of other origins: discovery, JWKS, token, revocation, UserInfo (X-ID-CORS-1).
    before: [corsMiddleware(identityCorsPolicy(deps), { ownOrigin: new URL(issuer).origin, logger: log })],
    // OAuth area: the token endpoints answer contract failures in RFC 6749 JSON, hosted pages as pages.
    problemMappers: {
      ...authorizeProblemMappers(deps),
      ...accountPagesProblemMappers(deps),
      ...tokenProblemMappers(deps),
      ...socialProblemMappers(deps),
      ...accountPageProblemMappers(deps),
      ...secondFactorProblemMappers(deps),
      ...accountSecurityProblemMappers(deps),
      ...mailboxProblemMappers(),
      ...passwordResetProblemMappers(deps),
      ...verifyEmailPagesProblemMappers(deps),
      ...passkeyProblemMappers(deps),
      ...endSessionProblemMappers(),
      ...deviceProblemMappers(deps),
      ...pushedRequestProblemMappers(deps),
    },
  });
  await webhooks.start();
  mail.start();
  backchannel.start();
  const retained = identityRetentionOf(config);
  const purger = createPurger(db, identityRetentionRules(retained.periods), { batchRows: retained.batchRows, pauseMs: PURGE_PAUSE_MS });
  const retention = scheduleRetention(purger, { intervalMs: retained.intervalMs, clock, logger: log });
  return {
    app,
    db,
    deps,
    /** The domain's shared context: tests and tools reach the storage and keys through it. */
    ctx,
    readiness,
    /** Runs the retention purge now, at the service clock's time (tests and tools; the schedule runs it every interval). */
    purge: () => purger.purge(clock.now()),
    close: async () => {
      await retention.stop();
      await webhooks.stop();
      await mail.stop();
      await backchannel.stop();
      await signer.close();
      await db.destroy();
    },
  };
}

/** The mail area's settings: the templates, the transport the configuration chose (none while it lacks its settings) and the mailbox rule. */
export function mailSettingsOf(config: IdentityServiceConfig, log: Logger) {
  const settings = identityMailOf(config);
  if (settings.transport.kind === "unconfigured")
    log.warn(
      { missing: settings.transport.missing },
      `identity mail: ${settings.transport.missing} is not set; messages are queued, not sent`,
    );
  return { render: createMailRenderer(), transport: createMailTransport(settings), mailboxEnabled: settings.mailboxEnabled };
}
