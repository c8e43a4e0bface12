/**
 * The webhook area: identity's webhook subscriptions on the shared delivery engine
 * (server/webhooks), the event sink the rest of the service publishes user events to, and the
 * rules of the webhook API (spec/identity/webhooks.tsp, X-ID-WH-1..5).
 */
import { randomBytes, randomUUID } from "node:crypto";
import type { Knex } from "knex";
import type { components } from "../../../../generated/types/identity.ts";
import { HttpProblem, notFound } from "../../../../server/http/problem.ts";
import {
  checkWebhookUrl,
  combineSchemes,
  createAddressPolicy,
  createDeliveryEngine,
  fixedDelayPolicy,
  generateWebhookSecret,
  hexHmacScheme,
  standardWebhooksScheme,
  type AttemptRow,
  type Endpoint,
  type SignatureScheme,
  uuidv7,
} from "../../../../server/webhooks/index.ts";
import { createAttemptHistory, encodeCursor } from "../../../../server/webhooks/history.ts";
import { createWebhookQueries, type WebhookRow } from "../../storage/webhook-queries.ts";
import type { IdentityContext } from "../context.ts";
import type { EventSink, UserEvent, UserEventType } from "../events.ts";
import { createSecretBox, type SecretBox } from "../../../../server/webhooks/sealed-secrets.ts";
import { historyPosition, type HistoryRequest } from "./history-paging.ts";

type Schemas = components["schemas"];
export type WebhookCreateInput = Schemas["WebhookCreate"];
export type WebhookUpdateInput = Schemas["WebhookUpdate"];

/** The event catalogue (ID-WH-7), in its documented order. */
export const EVENT_CATALOG: Schemas["WebhookEventInfo"][] = [
  { event: "user.created", description: "A new user registers (hosted sign-up, POST /api/users, or a first social sign-in)." },
  { event: "user.updated", description: "A user profile is updated." },
  { event: "user.deleted", description: "A user is deleted." },
];

/** Synthetic data of test events: recognisable, never a real user. */
const TEST_USER_ID = "00000000-0000-4000-8000-000000000000";
const testData = (event: UserEventType, at: string): Record<string, unknown> =>
  event === "user.deleted"
    ? { userId: TEST_USER_ID, deletedAt: at }
    : { userId: TEST_USER_ID, email: "test@example.com", firstName: "Test", lastName: "User", ...(event === "user.updated" ? { changedFields: ["firstName"] } : {}) };

/**
 * The signature headers of identity deliveries (IdentityWebhookReceiver): `X-Webhook-Signature`
 * (hex HMAC of the body with the newest secret), Standard Webhooks (one entry per valid secret),
 * and the event type and delivery id.
 */
export const identitySignature: SignatureScheme = (() => {
  const schemes = combineSchemes(hexHmacScheme("X-Webhook-Signature", "sha256="), standardWebhooksScheme());
  return (input) => {
    const headers = schemes(input);
    headers["X-Webhook-Event"] = input.eventType;
    headers["X-Webhook-Delivery-Id"] = input.deliveryId;
    return headers;
  };
})();

export function createWebhooksArea(ctx: Omit<IdentityContext, "events">) {
  const { config, clock, db, core } = ctx;
  const queries = createWebhookQueries(db);
  const history = createAttemptHistory(db);
  const addressPolicy = createAddressPolicy(config.WEBHOOK_ALLOW_PRIVATE_TARGETS);
  let box: Promise<SecretBox> | undefined;
  // The sealing key is one server secret shared by every instance, created on first use.
  const secretBox = () =>
    (box ??= core
      .serverSecret("webhook_secret_key", () => randomBytes(32).toString("base64url"), clock.now().toISOString())
      .then((value) => createSecretBox(Buffer.from(value, "base64url"))));

  /** Secrets valid now, newest first: the current one, and the previous one inside its overlap. */
  async function validSecrets(row: WebhookRow, nowIso: string): Promise<string[]> {
    const b = await secretBox();
    const secrets = [b.open(row.secret)];
    if (row.previous_secret && row.previous_secret_expires_at && row.previous_secret_expires_at > nowIso) secrets.push(b.open(row.previous_secret));
    return secrets;
  }

  const engine = createDeliveryEngine({
    db,
    clock,
    logger: ctx.logger,
    sign: identitySignature,
    addressPolicy,
    timeoutMs: config.WEBHOOK_TIMEOUT_MS,
    leaseMs: config.WEBHOOK_LEASE_SECONDS * 1000,
    pollIntervalMs: config.WEBHOOK_POLL_INTERVAL_MS,
    concurrency: config.WEBHOOK_CONCURRENCY,
    async resolveEndpoints(ids) {
      const now = clock.now().toISOString();
      const map = new Map<string, Endpoint>();
      for (const row of await queries.findMany(ids)) {
        map.set(row.id, {
          id: row.id,
          url: row.url,
          secrets: await validSecrets(row, now),
          active: Boolean(row.is_active),
          // Seed §6: wait retryDelaySeconds, up to maxRetries retries; read at each failure, so
          // new settings apply to attempts scheduled afterwards.
          retryPolicy: fixedDelayPolicy({ delaySeconds: row.retry_delay_seconds, maxRetries: row.max_retries }),
        });
      }
      return map;
    },
  });

  /**
   * The outbox write (ID-EV-1, ID-EV-3): in the caller's transaction, the event and one delivery
   * per active webhook of the listed applications subscribed to its type. The body is fixed here,
   * so every attempt sends the same bytes.
   */
  const sink: EventSink = {
    async publish(trx: Knex.Transaction, event: UserEvent) {
      const eventId = randomUUID();
      const timestamp = clock.now().toISOString();
      await engine.recordEvent(trx, { id: eventId, type: event.type, data: event.data, createdAt: timestamp });
      if (!event.applicationIds.length) return;
      const hooks = (await queries.activeOfApplications([...new Set(event.applicationIds)], trx)).filter((w) =>
        (JSON.parse(w.events) as string[]).includes(event.type),
      );
      await engine.enqueue(
        trx,
        hooks.map((w) => {
          const id = uuidv7();
          return {
            id,
            eventId,
            endpointId: w.id,
            eventType: event.type,
            body: JSON.stringify({ id, event: event.type, timestamp, data: event.data }),
            trigger: "event" as const,
            autoRetry: true,
          };
        }),
      );
    },
  };

  /** The application, if it exists and belongs to the admin's organization (ID-WH-8: 404, then 403). */
  async function ownedApplication(organizationId: string, appId: string) {
    const app = await core.findApplicationById(appId);
    if (!app) throw notFound("No application with this id.");
    if (app.organizationId !== organizationId) throw new HttpProblem(403, "forbidden", "This application belongs to another organization.");
    return app;
  }

  async function ownedWebhook(organizationId: string, appId: string, webhookId: string) {
    const app = await ownedApplication(organizationId, appId);
    const row = await queries.find(app.id, webhookId);
    if (!row) throw notFound("No webhook with this id for this application.");
    return { app, row };
  }

  /** X-ID-WH-1: https (unless allowed), no internal target, events distinct. */
  async function checkInput(input: { url?: string | undefined; events?: string[] | undefined }): Promise<void> {
    if (input.events && new Set(input.events).size !== input.events.length) {
      throw new HttpProblem(400, "validation_failed", "The request does not match the contract.", { errors: [{ field: "body.events", message: "must not repeat an event type" }] });
    }
    if (input.url !== undefined) {
      const verdict = await checkWebhookUrl(input.url, { policy: addressPolicy, requireHttps: config.WEBHOOK_REQUIRE_HTTPS });
      if (!verdict.ok) {
        const [code, detail] =
          verdict.code === "insecure_url"
            ? ["insecure_url", "The webhook URL resolves to an internal address."]
            : ["validation_failed", "The request does not match the contract."];
        throw new HttpProblem(400, code, detail, { errors: [{ field: "body.url", message: verdict.message }] });
      }
    }
  }

  const toWebhook = (row: WebhookRow, applicationName: string): Schemas["Webhook"] => ({
    id: row.id,
    organizationId: row.organization_id,
    applicationId: row.application_id,
    applicationName,
    url: row.url,
    events: JSON.parse(row.events),
    isActive: Boolean(row.is_active),
    maxRetries: Number(row.max_retries),
    retryDelaySeconds: Number(row.retry_delay_seconds),
    createdAt: row.created_at,
  });

  const toDelivery = (a: AttemptRow): Schemas["WebhookDelivery"] => ({
    id: a.delivery_id,
    attemptId: a.id,
    webhookId: a.endpoint_id,
    eventId: a.event_id,
    event: a.event_type as UserEventType,
    statusCode: a.status_code === null ? null : Number(a.status_code),
    success: Boolean(a.success),
    attemptNumber: Number(a.attempt_number),
    deliveredAt: a.attempted_at,
    durationMs: Number(a.duration_ms),
    ...(a.error ? { error: a.error as NonNullable<Schemas["WebhookDelivery"]["error"]> } : {}),
    responseBodyExcerpt: a.response_excerpt,
    nextAttemptAt: a.next_attempt_at,
    trigger: a.trigger,
  });

  const manage = {
    async list(organizationId: string, appId: string, page: number, pageSize: number) {
      const app = await ownedApplication(organizationId, appId);
      const { items, totalCount } = await queries.list(app.id, page, pageSize);
      return { items: items.map((r) => toWebhook(r, app.name)), totalCount, page, pageSize };
    },

    async create(organizationId: string, appId: string, input: WebhookCreateInput): Promise<Schemas["WebhookWithSecret"]> {
      const app = await ownedApplication(organizationId, appId);
      await checkInput(input);
      const now = clock.now().toISOString();
      const secret = generateWebhookSecret();
      const row: WebhookRow = {
        id: randomUUID(),
        organization_id: organizationId,
        application_id: app.id,
        url: input.url,
        events: JSON.stringify(input.events),
        is_active: true,
        max_retries: input.maxRetries ?? 3,
        retry_delay_seconds: input.retryDelaySeconds ?? 60,
        secret: (await secretBox()).seal(secret),
        previous_secret: null,
        previous_secret_expires_at: null,
        created_at: now,
        updated_at: now,
      };
      await queries.insert(row);
      return { ...toWebhook(row, app.name), secret };
    },

    /** ID-WH-3: any subset; deactivating cancels pending attempts in the same transaction (X-ID-WH-3). */
    async update(organizationId: string, appId: string, webhookId: string, input: WebhookUpdateInput) {
      const { app, row } = await ownedWebhook(organizationId, appId, webhookId);
      await checkInput(input);
      const patch: Partial<WebhookRow> = {
        ...(input.url !== undefined ? { url: input.url } : {}),
        ...(input.events !== undefined ? { events: JSON.stringify(input.events) } : {}),
        ...(input.isActive !== undefined ? { is_active: input.isActive } : {}),
        ...(input.maxRetries !== undefined ? { max_retries: input.maxRetries } : {}),
        ...(input.retryDelaySeconds !== undefined ? { retry_delay_seconds: input.retryDelaySeconds } : {}),
      };
      if (Object.keys(patch).length) {
        await db.transaction(async (trx) => {
          await queries.update(row.id, { ...patch, updated_at: clock.now().toISOString() }, trx);
          if (input.isActive === false) await engine.cancelEndpoint(trx, row.id);
        });
      }
      return toWebhook({ ...row, ...patch }, app.name);
    },

    /** ID-WH-4: gone, with its pending attempts and its history. */
    async remove(organizationId: string, appId: string, webhookId: string) {
      const { row } = await ownedWebhook(organizationId, appId, webhookId);
      await db.transaction(async (trx) => {
        await queries.delete(row.id, trx);
        await engine.deleteEndpoint(trx, row.id);
      });
    },

    /** ID-WH-5, X-ID-WH-4: a new secret; the old one signs `webhook-signature` only inside the overlap. */
    async regenerateSecret(organizationId: string, appId: string, webhookId: string, overlapSeconds: number) {
      const { row } = await ownedWebhook(organizationId, appId, webhookId);
      const now = clock.now();
      const secret = generateWebhookSecret();
      const previousSecretExpiresAt = overlapSeconds > 0 ? new Date(now.getTime() + overlapSeconds * 1000).toISOString() : null;
      await queries.update(row.id, {
        secret: (await secretBox()).seal(secret),
        previous_secret: previousSecretExpiresAt ? row.secret : null,
        previous_secret_expires_at: previousSecretExpiresAt,
        updated_at: now.toISOString(),
      });
      return { secret, previousSecretExpiresAt };
    },

    /** ID-WH-6, X-ID-WH-6: one record per attempt, newest first, by cursor (or a bounded page); the total from its counter. */
    async deliveries(organizationId: string, appId: string, webhookId: string, request: HistoryRequest) {
      const position = historyPosition(request);
      const { row } = await ownedWebhook(organizationId, appId, webhookId);
      const [{ items, next }, totalCount] = await Promise.all([history.page(row.id, position, request.pageSize), history.count(row.id)]);
      return { items: items.map(toDelivery), totalCount, page: request.page, pageSize: request.pageSize, next: next && encodeCursor(next) };
    },

    async eventCatalog(organizationId: string, appId: string) {
      await ownedApplication(organizationId, appId);
      return { items: EVENT_CATALOG };
    },

    /** A manual attempt of an existing delivery: same id and body, next attempt number, no automatic retries. */
    async redeliver(organizationId: string, appId: string, webhookId: string, deliveryId: string): Promise<Schemas["DeliveryQueued"]> {
      const { row } = await ownedWebhook(organizationId, appId, webhookId);
      if (!row.is_active) throw new HttpProblem(409, "webhook_inactive", "Activate the webhook before redelivering.");
      const queued = await engine.redeliver(deliveryId, row.id);
      if (!queued) throw notFound("No delivery with this id for this webhook.");
      return { deliveryId, webhookId: row.id, event: queued.eventType as UserEventType, attemptNumber: queued.attemptNumber, scheduledAt: queued.scheduledAt };
    },

    /** A test event: a new delivery of synthetic data, sent once whatever the webhook's state or subscriptions. */
    async sendTest(organizationId: string, appId: string, webhookId: string, event: UserEventType): Promise<Schemas["DeliveryQueued"]> {
      const { row } = await ownedWebhook(organizationId, appId, webhookId);
      const id = uuidv7();
      const timestamp = clock.now().toISOString();
      await db.transaction((trx) =>
        engine.enqueue(trx, [
          {
            id,
            eventId: randomUUID(),
            endpointId: row.id,
            eventType: event,
            body: JSON.stringify({ id, event, timestamp, data: testData(event, timestamp) }),
            trigger: "test",
            autoRetry: false,
            sendWhenInactive: true,
          },
        ]),
      );
      return { deliveryId: id, webhookId: row.id, event, attemptNumber: 1, scheduledAt: timestamp };
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
