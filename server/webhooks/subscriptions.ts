/**
 * Webhook subscriptions, the side both services share above the delivery engine: endpoints with
 * sealed signing secrets, rotation with an overlap window, the URL rule (HTTPS, SSRF guard), the
 * event filter, the fan-out of one event to the subscribed endpoints in the caller's transaction
 * (outbox), the endpoints as the engine sees them, redelivery and test events. A service keeps
 * only what is its own: its events, their payloads and signature headers, who may see which
 * endpoint (a `scope`: identity's application, email's mode, live or test), and any
 * columns of its own (passed through as `extra`, typed by its `Row`). Their storage is
 * storage/endpoints.ts (the table's common columns: storage/schema.ts).
 */
import { randomBytes, randomUUID } from "node:crypto";
import type { Clock } from "../clock.ts";
import { conflict, invalid, notFound } from "../domain/errors.ts";
import type { Transactor, Tx } from "../storage/transaction.ts";
import { createSecretBox, type SecretBox } from "../security/secret-box.ts";
import { generateWebhookSecret } from "./signatures.ts";
import { checkWebhookUrl, type AddressPolicy } from "./ssrf.ts";
import type { DeliveryEngine, Endpoint, EnqueueInput } from "./engine.ts";
import { uuidv7 } from "./ids.ts";
import type { RetryPolicy } from "./policy.ts";
import type { EndpointStore } from "./storage/endpoints.ts";
import type { SubscriptionColumns, SubscriptionRow } from "./storage/schema.ts";

export interface SubscriptionOptions<Row extends SubscriptionRow = SubscriptionRow> {
  /** The service's endpoints table, scoped by its scope column (createWebhookStorage(db, …).endpoints). */
  queries: EndpointStore<Row>;
  /** Opens the transactions that change an endpoint together with its deliveries. */
  transaction: Transactor;
  clock: Clock;
  addressPolicy: AddressPolicy;
  requireHttps: boolean;
  /** The server key that seals secrets, shared by every instance (created on first use by the service). */
  sealingKey: () => Promise<Buffer>;
  /** The 404 detail for an endpoint missing from its scope. Default "No webhook with this id." */
  notFoundDetail?: string;
  /** The order of `list`, as the service's contract states it (identity X-ID-WH-5: oldest first). */
  listOrder: "oldest_first" | "newest_first";
}

/** An event as the outbox records it; the service builds the bytes each delivery sends. */
export interface SubscriptionEvent {
  id: string;
  type: string;
  data: unknown;
  createdAt: string;
}

/** `Row` is the service's row: the common columns and its own. */
export function createSubscriptions<Row extends SubscriptionRow = SubscriptionRow>(options: SubscriptionOptions<Row>) {
  const { queries, transaction, clock, addressPolicy, requireHttps } = options;
  const notFoundDetail = options.notFoundDetail ?? "No webhook with this id.";
  let box: Promise<SecretBox> | undefined;
  const secretBox = () => (box ??= options.sealingKey().then(createSecretBox));
  const iso = () => clock.now().toISOString();

  /** Secrets valid now, newest first: the current one, and the previous one inside its overlap. */
  async function validSecrets(row: Row, nowIso = iso()): Promise<string[]> {
    const b = await secretBox();
    const secrets = [b.open(row.secret)];
    if (row.previous_secret && row.previous_secret_expires_at && row.previous_secret_expires_at > nowIso)
      secrets.push(b.open(row.previous_secret));
    return secrets;
  }

  /** The URL rule (HTTPS unless the deployment allows http, no internal target) and distinct events. */
  async function checkInput(input: { url?: string | undefined; events?: string[] | undefined }): Promise<void> {
    if (input.events && new Set(input.events).size !== input.events.length) {
      throw invalid("validation_failed", "The request does not match the contract.", [
        { field: "body.events", message: "must not repeat an event type" },
      ]);
    }
    if (input.url !== undefined) {
      const verdict = await checkWebhookUrl(input.url, { policy: addressPolicy, requireHttps });
      if (!verdict.ok) {
        const [code, detail] =
          verdict.code === "insecure_url"
            ? ["insecure_url", "The webhook URL resolves to an internal address."]
            : ["validation_failed", "The request does not match the contract."];
        throw invalid(code, detail, [{ field: "body.url", message: verdict.message }]);
      }
    }
  }

  /** The outbox write of one event: the event and one delivery per endpoint, with the body fixed now so every attempt sends the same bytes. */
  async function fanOut(
    trx: Tx,
    engine: DeliveryEngine,
    event: SubscriptionEvent,
    endpoints: SubscriptionColumns[],
    bodyFor: (deliveryId: string) => string,
  ): Promise<void> {
    await engine.recordEvent(trx, event);
    if (!endpoints.length) return;
    await engine.enqueue(
      trx,
      endpoints.map((w): EnqueueInput => {
        const id = uuidv7();
        return { id, eventId: event.id, endpointId: w.id, eventType: event.type, body: bodyFor(id), trigger: "event", autoRetry: true };
      }),
    );
  }

  /** Active endpoints of these scopes subscribed to `eventType` (the event filter), read in the caller's transaction. */
  async function subscribed(trx: Tx, scopes: string[], eventType: string): Promise<SubscriptionColumns[]> {
    if (!scopes.length) return [];
    const rows = await queries.active(scopes, trx);
    return rows.filter((r) => (JSON.parse(r.events) as string[]).includes(eventType));
  }

  return {
    /** Endpoints of a scope in the service's order (ids are UUIDv7, so they break ties in creation order). */
    async list(scope: string, page: number, pageSize: number) {
      return queries.page(scope, options.listOrder === "newest_first" ? "desc" : "asc", pageSize, (page - 1) * pageSize);
    },

    /** The endpoint or 404. */
    async get(scope: string, id: string): Promise<Row> {
      const row = await queries.find(scope, id);
      if (!row) throw notFound(notFoundDetail);
      return row;
    },

    /**
     * The endpoints of a batch of deliveries as the engine sends to them (its `resolveEndpoints`):
     * URL, the secrets valid now, activity, and the retry policy the service gives each row.
     */
    async endpoints(ids: string[], retryPolicy: (row: Row) => RetryPolicy): Promise<Map<string, Endpoint>> {
      const now = iso();
      const map = new Map<string, Endpoint>();
      for (const row of await queries.byIds(ids)) {
        map.set(row.id, {
          id: row.id,
          url: row.url,
          secrets: await validSecrets(row, now),
          active: Boolean(row.is_active),
          retryPolicy: retryPolicy(row),
        });
      }
      return map;
    },

    /** A new endpoint with a fresh secret (returned once, in the clear). */
    async create(scope: string, input: { url: string; events: string[]; extra?: Record<string, unknown> }) {
      await checkInput(input);
      const now = iso();
      const secret = generateWebhookSecret();
      const row = await queries.insert(scope, {
        id: randomUUID(),
        url: input.url,
        events: JSON.stringify(input.events),
        is_active: true,
        secret: (await secretBox()).seal(secret),
        previous_secret: null,
        previous_secret_expires_at: null,
        created_at: now,
        updated_at: now,
        ...input.extra,
      } as Row);
      return { row, secret };
    },

    /** Any subset; deactivating cancels pending deliveries in the same transaction. */
    async update(
      scope: string,
      id: string,
      input: { url?: string | undefined; events?: string[] | undefined; isActive?: boolean | undefined; extra?: Record<string, unknown> },
      engine: DeliveryEngine,
    ): Promise<Row> {
      const row = await this.get(scope, id);
      await checkInput(input);
      const patch = {
        ...(input.url !== undefined ? { url: input.url } : {}),
        ...(input.events !== undefined ? { events: JSON.stringify(input.events) } : {}),
        ...(input.isActive !== undefined ? { is_active: input.isActive } : {}),
        ...input.extra,
      } as Partial<Row>;
      if (!Object.keys(patch).length) return row;
      patch.updated_at = iso();
      await transaction(async (trx) => {
        await queries.update(id, patch, trx);
        if (input.isActive === false) await engine.cancelEndpoint(trx, id);
      });
      return { ...row, ...patch };
    },

    /** Gone, with its pending deliveries and its history. */
    async remove(scope: string, id: string, engine: DeliveryEngine): Promise<void> {
      const row = await this.get(scope, id);
      await transaction(async (trx) => {
        await queries.delete(row.id, trx);
        await engine.deleteEndpoint(trx, row.id);
      });
    },

    /** A new secret; the old one still signs `webhook-signature` for `overlapSeconds` (0 = ends now). */
    async rotateSecret(scope: string, id: string, overlapSeconds: number) {
      const row = await this.get(scope, id);
      const now = clock.now();
      const secret = generateWebhookSecret();
      const previousSecretExpiresAt = overlapSeconds > 0 ? new Date(now.getTime() + overlapSeconds * 1000).toISOString() : null;
      await queries.update(row.id, {
        secret: (await secretBox()).seal(secret),
        previous_secret: previousSecretExpiresAt ? row.secret : null,
        previous_secret_expires_at: previousSecretExpiresAt,
        updated_at: now.toISOString(),
      } as Partial<Row>);
      return { row, secret, previousSecretExpiresAt };
    },

    /** An event to the active endpoints of `scopes` subscribed to its type (the filter, then the outbox write), in `trx`. */
    async publish(
      trx: Tx,
      engine: DeliveryEngine,
      scopes: string[],
      event: SubscriptionEvent,
      bodyFor: (deliveryId: string) => string,
    ): Promise<void> {
      await fanOut(trx, engine, event, await subscribed(trx, scopes, event.type), bodyFor);
    },

    /**
     * A manual attempt of an existing delivery: the same id and body, the next attempt number, no
     * automatic retries. 409 while the endpoint is inactive, 404 when it has no such delivery.
     */
    async redeliver(endpoint: Row, deliveryId: string, engine: DeliveryEngine) {
      if (!endpoint.is_active) throw conflict("Activate the webhook before redelivering.", "webhook_inactive");
      const queued = await engine.redeliver(deliveryId, endpoint.id);
      if (!queued) throw notFound("No delivery with this id for this webhook.");
      return queued;
    },

    /**
     * A test event: the event (synthetic data) and one new delivery of it, sent once whatever the
     * endpoint's state or subscriptions. Returns the delivery id.
     */
    async sendTest(
      endpoint: Row,
      engine: DeliveryEngine,
      event: SubscriptionEvent,
      bodyFor: (deliveryId: string) => string,
    ): Promise<string> {
      const id = uuidv7();
      await transaction(async (trx) => {
        await engine.recordEvent(trx, event);
        await engine.enqueue(trx, [
          {
            id,
            eventId: event.id,
            endpointId: endpoint.id,
            eventType: event.type,
            body: bodyFor(id),
            trigger: "test",
            autoRetry: false,
            sendWhenInactive: true,
          },
        ]);
      });
      return id;
    },
  };
}

export type Subscriptions<Row extends SubscriptionRow = SubscriptionRow> = ReturnType<typeof createSubscriptions<Row>>;

/** A 32-byte sealing key kept as a server secret (the service supplies how it stores one). */
export const newSealingKey = (): string => randomBytes(32).toString("base64url");
