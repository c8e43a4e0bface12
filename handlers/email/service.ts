/**
 * Assembles the email service: database, API keys, messages and their outbound dispatcher, the
 * simulator (an SMTP peer on 127.0.0.1) and the relay, the inbound listener for bounce and
 * complaint reports, tracking, suppression, webhooks, handlers and the Koa app.
 */
import { randomBytes } from "node:crypto";
import { transactor } from "../../server/storage/transaction.ts";
import type { Logger } from "pino";
import type { Clock } from "../../server/clock.ts";
import { definitionPath } from "../../server/definitions.ts";
import { createServiceApp, platformAppOptions } from "../../server/http/app.ts";
import { platformHandlers } from "../../server/http/platform-handlers.ts";
import { createServiceMetrics, webhookMetrics } from "../../server/observability/metrics.ts";
import { createWebhookStorage, loadWebhookSealingKey, pendingDeliveries } from "../../server/webhooks/index.ts";
import { keyEncryption } from "../../server/security/key-encryption.ts";
import { createReadiness } from "../../server/lifecycle.ts";
import { bearerChallenge } from "../../server/http/problem.ts";
import { bearerToken } from "../../server/security/tokens.ts";
import { closeAndRethrow, openDatabase } from "../../server/storage/db.ts";
import { serverSecret } from "../../server/storage/server-secrets.ts";
import { createPurger, PURGE_PAUSE_MS, scheduleRetention } from "../../server/storage/retention.ts";
import { bounceDomainOf, emailListener, emailRetentionOf, type EmailServiceConfig, emailWebhookSettingsOf } from "./config.ts";
import { emailOutboundMetrics } from "./metrics.ts";
import { apiKeyHandlers } from "./api-keys.ts";
import type { EmailDeps, EmailHandlers } from "./email-handlers.ts";
import { createApiKeys, type ApiKeys, type EmailPrincipal } from "./domain/api-keys.ts";
import { createClickTokens } from "./domain/click-links.ts";
import { createMessages } from "./domain/messages.ts";
import { createOutbound, DEFAULT_RETRY_DELAYS_MS } from "./domain/outbound.ts";
import { createOutcomes } from "./domain/outcomes.ts";
import { createRateLimiter } from "./domain/rate-limit.ts";
import { createRenderer } from "./domain/rendering.ts";
import { createReports } from "./domain/reports.ts";
import { createSuppressions } from "./domain/suppressions.ts";
import { createTracking } from "./domain/tracking.ts";
import { createEmailWebhooks } from "./domain/webhooks.ts";
import { emailHandlers } from "./emails.ts";
import { loadDkimConfig } from "./mail/dkim.ts";
import { createInboundListener } from "./mail/inbound.ts";
import { createParseThread } from "./mail/parse-thread.ts";
import { startSimulator } from "./mail/simulator.ts";
import { createTransports } from "./mail/transport.ts";
import { createEmailStorage } from "./storage/index.ts";
import { emailRetentionRules } from "./storage/retention-rules.ts";
import { migrations } from "./storage/migrations/index.ts";
import { suppressionHandlers } from "./suppressions.ts";
import { trackingHandlers } from "./tracking.ts";
import { webhookHandlers } from "./webhooks.ts";

export const REALM = "email";
const SEND_BODY_LIMIT = 10 * 1024 * 1024;

/**
 * EM-2, RFC 6750 §3: no Bearer credentials is a bare challenge (`unauthorized`, answered by the app);
 * a key that is malformed, unknown or revoked is `invalid_token` with `error="invalid_token"`.
 */
async function authenticateApiKey(apiKeys: ApiKeys, header: string | string[] | undefined): Promise<EmailPrincipal | undefined> {
  if (typeof header !== "string" || !/^Bearer(\s|$)/i.test(header)) return undefined;
  const principal = await apiKeys.authenticate(bearerToken(header));
  if (!principal) throw bearerChallenge(REALM, "The API key is malformed, unknown or revoked.", "invalid_token");
  return principal;
}

export interface EmailServiceOptions {
  /** Delays between outbound attempts (tests shorten them; default X-EM-16's schedule). */
  retryDelaysMs?: readonly number[];
  /** Webhook retry jitter source (tests fix it). */
  random?: () => number;
}

export async function createEmailService(config: EmailServiceConfig, clock: Clock, logger: Logger, options: EmailServiceOptions = {}) {
  const log = logger.child({ service: "email" });
  const db = await openDatabase({ service: "email", databaseUrl: config.DATABASE_URL, dataDir: config.DATA_DIR, migrations });
  const baseUrl = emailListener(config).publicUrl;
  const dkim = loadDkimConfig(config);
  if (dkim.errors.length) throw new Error(`Invalid DKIM configuration: ${dkim.errors.join("; ")}`);
  const sendingDomains = new Set([...config.EMAIL_SENDING_DOMAINS, ...(dkim.config ? [dkim.config.domain] : [])]);
  const bounceDomain = bounceDomainOf(config);

  const encryption = keyEncryption(config.KEY_ENCRYPTION_KEY, config.KEY_ENCRYPTION_KEY_PREVIOUS);
  // X-EM-28: click tokens are signed under one key shared by every instance (sealed under KEY_ENCRYPTION_KEY when set).
  const clickTokens = createClickTokens(
    Buffer.from(
      await serverSecret(db, "click_token_key", () => randomBytes(32).toString("base64url"), clock.now().toISOString(), encryption).catch(
        closeAndRethrow(db),
      ),
      "base64url",
    ),
  );
  // Parsing off the event loop (parse-thread.ts): one thread for the senders' HTML, one for the
  // unauthenticated reports, so a flood of reports never holds up a send.
  const htmlThread = createParseThread();
  const reportThread = createParseThread();
  const planHtml = (html: string, maxLinks: number) => htmlThread.planHtml(html, maxLinks);

  // Domain modules receive the stores and a transactor, never the database handle itself.
  const storage = createEmailStorage(db);
  const queries = storage.messages;
  const apiKeys = createApiKeys(storage.apiKeys, clock);
  const suppressions = createSuppressions(storage.suppressions, clock);
  const transaction = transactor(db);
  const metrics = createServiceMetrics();
  const webhooks = createEmailWebhooks({
    storage: createWebhookStorage(db, { table: "webhooks", scopeColumn: "scope" }),
    clock,
    // Read at start: a KEY_ENCRYPTION_KEY that does not open it stops the start, not a delivery.
    sealingKey: await loadWebhookSealingKey(db, clock.now(), encryption).catch(closeAndRethrow(db)),
    logger: log,
    ...emailWebhookSettingsOf(config),
    ...(options.random ? { random: options.random } : {}),
    onAttempt: webhookMetrics(metrics, () => pendingDeliveries(db), clock).attempt,
  });
  const outcomes = createOutcomes({ clock, queries, suppressions, events: webhooks.events });
  const reports = createReports({ transaction, logger: log, queries, outcomes });
  const tracking = createTracking({ transaction, clock, queries, outcomes, events: webhooks.events, clickTokens });

  // Reports come in over SMTP, as real mail systems send them; the simulator mails its own there too.
  const inbound = await createInboundListener({
    host: config.HOST,
    port: config.EMAIL_INBOUND_SMTP_PORT,
    maxClientsPerPeer: config.EMAIL_INBOUND_MAX_SESSIONS_PER_PEER,
    bounceDomain,
    logger: log,
    onReport: (r) => reports.apply(r),
    parse: (raw) => reportThread.parseReport(raw),
  });
  // The simulator mails its reports to the listener over loopback, whatever interface the listener serves.
  const inboundHost = ["0.0.0.0", "::"].includes(inbound.host) ? "127.0.0.1" : inbound.host;
  const simulator = await startSimulator({
    inbound: { host: inboundHost, port: inbound.port },
    logger: log,
    reportDelayMs: config.EMAIL_SIMULATOR_REPORT_DELAY_MS,
  });
  const transports = createTransports({
    simulator: { host: simulator.host, port: simulator.port },
    relayUrl: config.EMAIL_SMTP_URL,
    sink: config.EMAIL_TRANSPORT === "sink",
    dkim: dkim.config,
    logger: log,
  });

  const trackingBase = (config.EMAIL_TRACKING_BASE_URL ?? baseUrl).replace(/\/$/, "");
  const trackingUrl = (kind: "open" | "click", token: string) => `${trackingBase}/v1/track/${kind}/${token}`;
  const renderer = createRenderer({ queries, trackingUrl, bounceDomain, clickTokens, planHtml });
  const outbound = createOutbound({
    transaction,
    clock,
    logger: log,
    queries,
    outcomes,
    suppressions,
    compose: (copy, use) => renderer.compose(copy, use),
    send: (transport, copy) => transports.send(transport, copy),
    concurrency: config.EMAIL_SEND_CONCURRENCY,
    leaseMs: Math.max(config.WEBHOOK_LEASE_SECONDS * 1000, 120_000),
    pollIntervalMs: config.WEBHOOK_POLL_INTERVAL_MS,
    retryDelaysMs: options.retryDelaysMs ?? DEFAULT_RETRY_DELAYS_MS,
    onAttempt: emailOutboundMetrics(metrics, () => queries.pendingCopies(), clock).attempt,
  });
  const messages = createMessages({
    clock,
    queries,
    suppressions,
    transports: { relay: Boolean(config.EMAIL_SMTP_URL), sink: config.EMAIL_TRANSPORT === "sink", sendingDomains },
    trackingBaseUrl: trackingBase,
    planHtml,
    queued: () => outbound.wake(),
  });

  const deps: EmailDeps = {
    apiKeys,
    messages,
    suppressions,
    tracking,
    webhooks,
    rateLimiter: createRateLimiter(config.EMAIL_RATE_LIMIT_PER_SECOND, clock),
    renderer,
  };
  // Shutdown (server/lifecycle.ts) turns it off, so that /ready answers 503 while requests drain.
  const readiness = createReadiness();
  const handlers: EmailHandlers = {
    ...platformHandlers({
      service: "email",
      db,
      clock,
      readiness,
      metrics,
      metricsToken: config.METRICS_TOKEN,
      reference: { title: "Email Service", definitionPath: definitionPath("email") },
    }),
    ...apiKeyHandlers,
    ...emailHandlers,
    ...suppressionHandlers,
    ...trackingHandlers,
    ...webhookHandlers,
  };

  const app = await createServiceApp<EmailDeps, EmailPrincipal | undefined>({
    name: "email",
    definition: definitionPath("email"),
    handlers,
    securityHandlers: { ApiKeyAuth: ({ headers }) => authenticateApiKey(apiKeys, headers.authorization) },
    realm: REALM,
    deps,
    logger: log,
    ...platformAppOptions(config),
    largeBodies: [{ method: "POST", path: "/v1/emails", limitBytes: SEND_BODY_LIMIT }],
    metrics,
    publicUrl: baseUrl,
  });
  await webhooks.start();
  outbound.start();
  const retained = emailRetentionOf(config);
  const purger = createPurger(db, emailRetentionRules(retained.periods), { batchRows: retained.batchRows, pauseMs: PURGE_PAUSE_MS });
  const retention = scheduleRetention(purger, { intervalMs: retained.intervalMs, clock, logger: log });
  return {
    app,
    db,
    deps,
    readiness,
    inbound,
    simulator,
    /** Runs every due copy and webhook delivery now, and the simulator's pending reports (tests and tools). */
    async settle(): Promise<void> {
      await outbound.dispatchDue();
      await simulator.settled();
      await webhooks.engine.dispatchDue();
    },
    /** Runs the retention purge now, at the service clock's time (tests and tools; the schedule runs it every interval). */
    purge: () => purger.purge(clock.now()),
    close: async () => {
      await retention.stop();
      await outbound.stop();
      await webhooks.stop();
      await simulator.close();
      await inbound.close();
      await transports.close();
      await htmlThread.close();
      await reportThread.close();
      await db.destroy();
    },
  };
}
