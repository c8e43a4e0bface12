/**
 * The webhook area: identity's webhooks on the shared subscription component and delivery engine
 * (server/webhooks), the event sink the rest of the service publishes user events to, and what is
 * identity's alone: endpoints scoped to an application that the admin's organization owns (ID-WH-8),
 * the fixed retry delay of each webhook (seed §6), and the rules of webhooks and their attempts
 * (spec/identity/webhooks.tsp, X-ID-WH-1..6), returned as rows: the API's view of them is the
 * handler's (handlers/identity/webhooks.ts). Payloads and signature headers are in payloads.ts.
 */
import { randomUUID } from "node:crypto";
import type { Tx } from "../../../../server/storage/transaction.ts";
import type { WebhookSettings } from "../../../../server/config.ts";
import { forbidden, notFound } from "../../../../server/domain/errors.ts";
import {
  createAddressPolicy,
  createDeliveryEngine,
  createSubscriptions,
  fixedDelayPolicy,
  type SubscriptionRow,
  type WebhookStorage,
} from "../../../../server/webhooks/index.ts";
import { historyPosition, type HistoryRequest } from "../../../../server/webhooks/history.ts";
import type { IdentityContext } from "../context.ts";
import type { AdminAction, AuditEventType } from "../audit.ts";
import type { EventSink, UserEvent, UserEventType } from "../events.ts";
import { deliveryBody, EVENT_CATALOG, identitySignature, testData } from "./payloads.ts";

/** The headers identity signs each delivery with (both schemes, the event type and the delivery id). */
export { identitySignature };

export interface WebhookCreateInput {
  url: string;
  events: UserEventType[];
  maxRetries?: number;
  retryDelaySeconds?: number;
}
export type WebhookUpdateInput = Partial<WebhookCreateInput> & { isActive?: boolean };

/** A webhook with the name of its application, which the API shows beside it. */
export interface OwnedWebhook {
  row: WebhookRow;
  applicationName: string;
}

/** A delivery attempt queued now (a redelivery or a test event). */
export interface QueuedDelivery {
  deliveryId: string;
  webhookId: string;
  event: UserEventType;
  attemptNumber: number;
  scheduledAt: string;
}

/** Identity's `webhooks` row (migration 0003): the shared columns, scoped by `application_id`, and its own. */
export interface WebhookRow extends SubscriptionRow {
  organization_id: string;
  application_id: string;
  max_retries: number;
  retry_delay_seconds: number;
}

/**
 * `storage`: the webhook tables' queries and transactor (createWebhookStorage over the `webhooks`
 * table, scoped by `application_id`), built by service.ts; `settings`: the WEBHOOK_* variables.
 */
export function createWebhooksArea(ctx: Omit<IdentityContext, "events">, storage: WebhookStorage<WebhookRow>, settings: WebhookSettings) {
  const { clock } = ctx;
  const { applications } = ctx.storage;
  const addressPolicy = createAddressPolicy(settings.allowPrivateTargets);
  const subscriptions = createSubscriptions<WebhookRow>({
    queries: storage.endpoints,
    transaction: storage.transaction,
    clock,
    listOrder: "oldest_first", // X-ID-WH-5
    addressPolicy,
    requireHttps: settings.requireHttps,
    // One server secret shared by every instance (read at start: server/webhooks/sealing-key.ts).
    sealingKey: async () => ctx.webhookSealingKey,
    notFoundDetail: "No webhook with this id for this application.",
  });
  const { history } = storage;

  /**
   * An admin's change of a webhook in the audit log (X-ID-AUD-2): the shared subscription
   * component commits the change in its own transaction, so the event is written right after it.
   */
  const recordChange = (type: AuditEventType, organizationId: string, appId: string, webhookId: string, by?: AdminAction, details = {}) =>
    ctx.audit.record(undefined, {
      type,
      actor: { type: "admin", id: by?.adminId },
      organizationId,
      applicationId: appId,
      origin: by?.origin,
      details: { webhookId, ...details },
    });

  const engine = createDeliveryEngine({
    queries: storage.deliveries,
    transaction: storage.transaction,
    clock,
    logger: ctx.logger,
    sign: identitySignature,
    addressPolicy,
    timeoutMs: settings.timeoutMs,
    leaseMs: settings.leaseMs,
    pollIntervalMs: settings.pollIntervalMs,
    concurrency: settings.concurrency,
    // Seed §6: wait retryDelaySeconds, up to maxRetries retries; read at each failure, so new
    // settings apply to attempts scheduled afterwards.
    resolveEndpoints: (ids) =>
      subscriptions.endpoints(ids, (row) => fixedDelayPolicy({ delaySeconds: row.retry_delay_seconds, maxRetries: row.max_retries })),
    onAttempt: ctx.metrics.webhooks.attempt,
  });

  /**
   * The outbox write (ID-EV-1, ID-EV-3): in the caller's transaction, the event and one delivery
   * per active webhook of the listed applications subscribed to its type.
   */
  const sink: EventSink = {
    async publish(trx: Tx, event: UserEvent) {
      const recorded = { id: randomUUID(), type: event.type, data: event.data, createdAt: clock.now().toISOString() };
      await subscriptions.publish(trx, engine, event.applicationIds, recorded, (deliveryId) => deliveryBody(deliveryId, recorded));
    },
  };

  /** The application, if it exists and belongs to the admin's organization (ID-WH-8: 404, then 403). */
  async function ownedApplication(organizationId: string, appId: string) {
    const app = await applications.findById(appId);
    if (!app) throw notFound("No application with this id.");
    if (app.organizationId !== organizationId) throw forbidden("This application belongs to another organization.");
    return app;
  }

  /** A webhook of an owned application (then 404 for a webhook of another application). */
  async function ownedWebhook(organizationId: string, appId: string, webhookId: string) {
    const app = await ownedApplication(organizationId, appId);
    return subscriptions.get(app.id, webhookId);
  }

  const manage = {
    async list(organizationId: string, appId: string, page: number, pageSize: number) {
      const app = await ownedApplication(organizationId, appId);
      const { items, totalCount } = await subscriptions.list(app.id, page, pageSize);
      return { items: items.map((row): OwnedWebhook => ({ row, applicationName: app.name })), totalCount, page, pageSize };
    },

    /** ID-WH-1, X-ID-WH-1: https (unless allowed), no internal target, events distinct. */
    async create(
      organizationId: string,
      appId: string,
      input: WebhookCreateInput,
      by?: AdminAction,
    ): Promise<OwnedWebhook & { secret: string }> {
      const app = await ownedApplication(organizationId, appId);
      const { row, secret } = await subscriptions.create(app.id, {
        url: input.url,
        events: input.events,
        extra: { organization_id: organizationId, max_retries: input.maxRetries ?? 3, retry_delay_seconds: input.retryDelaySeconds ?? 60 },
      });
      await recordChange("webhook.created", organizationId, app.id, row.id, by, { url: row.url, events: input.events });
      return { row, applicationName: app.name, secret };
    },

    /** ID-WH-3: any subset; deactivating cancels pending attempts in the same transaction (X-ID-WH-3). */
    async update(
      organizationId: string,
      appId: string,
      webhookId: string,
      input: WebhookUpdateInput,
      by?: AdminAction,
    ): Promise<OwnedWebhook> {
      const app = await ownedApplication(organizationId, appId);
      const extra = {
        ...(input.maxRetries !== undefined ? { max_retries: input.maxRetries } : {}),
        ...(input.retryDelaySeconds !== undefined ? { retry_delay_seconds: input.retryDelaySeconds } : {}),
      };
      const row = await subscriptions.update(
        app.id,
        webhookId,
        { url: input.url, events: input.events, isActive: input.isActive, extra },
        engine,
      );
      const changedFields = Object.keys(input).filter((k) => input[k as keyof WebhookUpdateInput] !== undefined);
      await recordChange("webhook.updated", organizationId, app.id, row.id, by, { changedFields });
      return { row, applicationName: app.name };
    },

    /** ID-WH-4: gone, with its pending attempts and its history. */
    async remove(organizationId: string, appId: string, webhookId: string, by?: AdminAction) {
      const app = await ownedApplication(organizationId, appId);
      await subscriptions.remove(app.id, webhookId, engine);
      await recordChange("webhook.deleted", organizationId, app.id, webhookId, by);
    },

    /** ID-WH-5, X-ID-WH-4: a new secret; the old one signs `webhook-signature` only inside the overlap. */
    async regenerateSecret(organizationId: string, appId: string, webhookId: string, overlapSeconds: number, by?: AdminAction) {
      const app = await ownedApplication(organizationId, appId);
      const { secret, previousSecretExpiresAt } = await subscriptions.rotateSecret(app.id, webhookId, overlapSeconds);
      await recordChange("webhook.secret_regenerated", organizationId, app.id, webhookId, by, { overlapSeconds });
      return { secret, previousSecretExpiresAt };
    },

    /** ID-WH-6, X-ID-WH-6: one record per attempt, newest first, by cursor (or a bounded page); the total from its counter. */
    async deliveries(organizationId: string, appId: string, webhookId: string, request: HistoryRequest) {
      const position = historyPosition(request);
      const row = await ownedWebhook(organizationId, appId, webhookId);
      const { items, totalCount, next } = await history.read(row.id, position, request.pageSize);
      return { items, totalCount, page: request.page, pageSize: request.pageSize, next };
    },

    async eventCatalog(organizationId: string, appId: string) {
      await ownedApplication(organizationId, appId);
      return { items: EVENT_CATALOG };
    },

    /** A manual attempt of an existing delivery: same id and body, next attempt number, no automatic retries. */
    async redeliver(organizationId: string, appId: string, webhookId: string, deliveryId: string): Promise<QueuedDelivery> {
      const row = await ownedWebhook(organizationId, appId, webhookId);
      const queued = await subscriptions.redeliver(row, deliveryId, engine);
      return {
        deliveryId,
        webhookId: row.id,
        event: queued.eventType as UserEventType,
        attemptNumber: queued.attemptNumber,
        scheduledAt: queued.scheduledAt,
      };
    },

    /** X-ID-WH-2: a test event, a new delivery of synthetic data, sent once whatever the webhook's state or subscriptions. */
    async sendTest(organizationId: string, appId: string, webhookId: string, type: UserEventType): Promise<QueuedDelivery> {
      const row = await ownedWebhook(organizationId, appId, webhookId);
      const at = clock.now().toISOString();
      const event = { id: randomUUID(), type, data: testData(type, at), createdAt: at };
      const deliveryId = await subscriptions.sendTest(row, engine, event, (id) => deliveryBody(id, event));
      return { deliveryId, webhookId: row.id, event: type, attemptNumber: 1, scheduledAt: at };
    },
  };

  return {
    sink,
    manage,
    engine,
    /** Runs due deliveries now and waits for them (tests and tools; the dispatcher does this on its own). */
    dispatchDue: () => engine.dispatchDue(),
    start: async () => engine.start(),
    stop: () => engine.stop(),
  };
}

export type WebhooksArea = ReturnType<typeof createWebhooksArea>;
