/**
 * Email's webhooks (EM-1, EM-4..7) on the shared subscription component and delivery engine:
 * email's own schedule (5 s time-out, 7 attempts, 5 s × 6^(n−2) ± 10 %), its signature headers
 * (`X-Service-Signature` and Standard Webhooks with `webhook-id` = the event id), its event
 * catalogue and test events. Everything else is server/webhooks.
 */
import { randomUUID } from "node:crypto";
import type { Logger } from "pino";
import type { Clock } from "../../../server/clock.ts";
import type { WebhookSettings } from "../../../server/config.ts";
import { conflict, notFound } from "../../../server/domain/errors.ts";
import {
  combineSchemes,
  createAddressPolicy,
  createDeliveryEngine,
  createSubscriptions,
  hexHmacScheme,
  jitteredExponentialPolicy,
  standardWebhooksScheme,
  type DeliveryEngine,
  type SignatureScheme,
  type SubscriptionRow,
  type WebhookStorage,
} from "../../../server/webhooks/index.ts";
import { createEventPublisher, envelope, webhookScope, type WebhookEventType } from "./events.ts";

/** Seed §6: "a few seconds"; X-EM-10: 5 s, 7 attempts, 5 s × 6^(n−2) with ±10 % jitter. */
export const EMAIL_WEBHOOK_SCHEDULE = { baseMs: 5000, factor: 6, maxAttempts: 7, jitter: 0.1 } as const;

export const emailSignature: SignatureScheme = combineSchemes(
  hexHmacScheme("X-Service-Signature", ""),
  standardWebhooksScheme({ id: "event" }),
);

/** The platform's webhook settings (email's own timeout among them: config.ts) and what the engine runs on. */
export interface EmailWebhookOptions extends WebhookSettings {
  /** The webhook tables' queries and transactor (createWebhookStorage over the `webhooks` table, scope column `scope`), built by service.ts. */
  storage: WebhookStorage<SubscriptionRow>;
  clock: Clock;
  logger: Logger;
  /** Injectable jitter (tests observe the schedule exactly). */
  random?: () => number;
  /** Told the outcome of every attempt (metrics). */
  onAttempt?: (outcome: string) => void;
  /** The key webhook secrets are sealed under (loadWebhookSealingKey). */
  sealingKey: Buffer;
}

export function createEmailWebhooks(options: EmailWebhookOptions) {
  const { storage, clock } = options;
  const addressPolicy = createAddressPolicy(options.allowPrivateTargets);
  const subscriptions = createSubscriptions({
    queries: storage.endpoints,
    transaction: storage.transaction,
    clock,
    listOrder: "newest_first",
    addressPolicy,
    requireHttps: options.requireHttps,
    sealingKey: async () => options.sealingKey,
  });
  const retryPolicy = jitteredExponentialPolicy({ ...EMAIL_WEBHOOK_SCHEDULE, ...(options.random ? { random: options.random } : {}) });
  const records = storage.records;

  const engine: DeliveryEngine = createDeliveryEngine({
    queries: storage.deliveries,
    transaction: storage.transaction,
    clock,
    logger: options.logger,
    sign: emailSignature,
    addressPolicy,
    timeoutMs: options.timeoutMs,
    leaseMs: options.leaseMs,
    pollIntervalMs: options.pollIntervalMs,
    concurrency: options.concurrency,
    resolveEndpoints: (ids) => subscriptions.endpoints(ids, () => retryPolicy),
    onAttempt: options.onAttempt,
  });
  const events = createEventPublisher({ subscriptions, engine: () => engine });

  /** An endpoint of the caller's mode (X-EM-27): another mode's is 404, as an unknown id. */
  const get = (test: boolean, id: string) => subscriptions.get(webhookScope(test), id);

  async function delivery(test: boolean, webhookId: string, deliveryId: string) {
    await get(test, webhookId);
    const record = await records.get(webhookId, deliveryId);
    if (!record) throw notFound("No delivery with this id for this webhook.");
    return record;
  }

  // Every operation takes the caller's mode (`test`: a test key) and reaches only that mode's endpoints.
  return {
    events,
    engine,
    records,

    list: (test: boolean, page: number, pageSize: number) => subscriptions.list(webhookScope(test), page, pageSize),
    get,
    create: (test: boolean, input: { url: string; events: string[]; description?: string | undefined }) =>
      subscriptions.create(webhookScope(test), { url: input.url, events: input.events, extra: { description: input.description ?? "" } }),
    update: (
      test: boolean,
      id: string,
      input: { url?: string | undefined; events?: string[] | undefined; description?: string | undefined; isActive?: boolean | undefined },
    ) =>
      subscriptions.update(
        webhookScope(test),
        id,
        {
          url: input.url,
          events: input.events,
          isActive: input.isActive,
          ...(input.description !== undefined ? { extra: { description: input.description } } : {}),
        },
        engine,
      ),
    remove: (test: boolean, id: string) => subscriptions.remove(webhookScope(test), id, engine),
    rotateSecret: (test: boolean, id: string, overlapSeconds: number) => subscriptions.rotateSecret(webhookScope(test), id, overlapSeconds),

    async deliveries(test: boolean, webhookId: string, page: number, pageSize: number, status?: string) {
      await get(test, webhookId);
      return records.list(webhookId, { limit: pageSize, offset: (page - 1) * pageSize, status });
    },
    delivery,

    /** A manual attempt of a finished delivery: same id and body, the next attempt number, no automatic retries. */
    async redeliver(test: boolean, webhookId: string, deliveryId: string) {
      const record = await delivery(test, webhookId, deliveryId);
      if (record.delivery.status === "pending") throw conflict("This delivery still has an attempt scheduled.", "delivery_pending");
      await subscriptions.redeliver(await get(test, webhookId), deliveryId, engine);
      return delivery(test, webhookId, deliveryId);
    },

    /** A test event of `type`: fictitious data, one attempt, whatever the webhook's state or subscriptions. */
    async sendTest(test: boolean, webhookId: string, type: WebhookEventType) {
      const event = { id: randomUUID(), type, createdAt: clock.now().toISOString(), data: testData(type) };
      const body = envelope(event);
      return delivery(test, webhookId, await subscriptions.sendTest(await get(test, webhookId), engine, event, () => body));
    },

    start: async () => engine.start(),
    stop: () => engine.stop(),
  };
}

export type EmailWebhooks = ReturnType<typeof createEmailWebhooks>;

/** Synthetic data of test events: recognisable, never a real message. */
function testData(type: WebhookEventType) {
  const id = "00000000-0000-4000-8000-000000000000";
  switch (type) {
    case "email.bounced":
      return {
        id,
        toEmail: "bounced@simulator.test",
        status: "Bounced",
        errorMessage: "550 5.1.1 The email account that you tried to reach does not exist.",
        bounceType: "hard",
        smtpStatus: "5.1.1",
        metadata: {},
      };
    case "email.complained":
      return { id, toEmail: "complained@simulator.test", status: "Complained", metadata: {} };
    case "email.clicked":
      return { id, toEmail: "delivered@simulator.test", status: "Delivered", url: "https://example.com/", metadata: {} };
    default:
      return { id, toEmail: "delivered@simulator.test", status: "Delivered", metadata: {} };
  }
}
