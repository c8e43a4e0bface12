/**
 * The webhook engine's tables, as every store of server/webhooks/storage/ reads and writes them:
 * each table's name, its columns and its row type, in one place. Each service that sends webhooks
 * creates these tables in its own database (its migrations call ./migrations/), so the names are
 * the same in both services; its endpoints table is its own (a name, a scope column and columns of
 * its own beside the common ones), so only the common columns are declared here.
 * test/webhooks/schema.test.ts checks every declaration against both services' migrated tables
 * on SQLite and PostgreSQL.
 *
 * Times are ISO 8601 UTC strings of one fixed width, so they compare as text on both databases.
 * Booleans read back as 0/1 on SQLite and true/false on PostgreSQL; counts of PostgreSQL's
 * `bigint` read back as strings.
 */
import { defineTable } from "../../storage/schema.ts";

/** `pending`: an attempt is due at `next_attempt_at`; the rest are final. */
export type DeliveryStatus = "pending" | "succeeded" | "failed" | "cancelled";
export type Trigger = "event" | "retry" | "manual" | "test";

/** An event as the outbox records it (`data` is its JSON). */
export interface EventRow {
  id: string;
  type: string;
  data: string;
  created_at: string;
}

/** One delivery of an event to one endpoint: its body is fixed when it is made, so every attempt sends the same bytes. */
export interface DeliveryRow {
  id: string;
  event_id: string;
  endpoint_id: string;
  event_type: string;
  body: string;
  status: DeliveryStatus;
  attempts_made: number;
  next_attempt_at: string | null;
  next_trigger: Trigger;
  auto_retry: boolean | number;
  send_when_inactive: boolean | number;
  lease_token: string | null;
  lease_expires_at: string | null;
  created_at: string;
  updated_at: string;
}

/** One try of a delivery. */
export interface AttemptRow {
  id: string;
  delivery_id: string;
  endpoint_id: string;
  event_id: string;
  event_type: string;
  attempt_number: number;
  trigger: Trigger;
  status_code: number | null;
  success: boolean | number;
  error: string | null;
  error_detail: string | null;
  response_excerpt: string | null;
  duration_ms: number;
  attempted_at: string;
  next_attempt_at: string | null;
}

/** A delivery as a dispatcher claims it: what an attempt needs, without the lease and the times. */
export type ClaimedRow = Pick<
  DeliveryRow,
  "id" | "event_id" | "endpoint_id" | "event_type" | "body" | "attempts_made" | "next_trigger" | "auto_retry" | "send_when_inactive"
>;

/** The attempts of one endpoint (the history's total), kept by triggers. */
export interface AttemptCountRow {
  endpoint_id: string;
  attempts: number | string;
}

/** SQLite: the deliveries of one endpoint (the delivery history's total), kept by triggers. */
export interface DeliveryCountRow {
  endpoint_id: string;
  deliveries: number | string;
}

/** PostgreSQL: one change of an endpoint's delivery total; the total is their sum (migrations/delivery-count-deltas.ts). */
export interface DeliveryCountDeltaRow {
  endpoint_id: string;
  n: number | string;
}

/** The columns every service's endpoints table has, beside its scope column and its own columns. */
export interface SubscriptionColumns {
  id: string;
  url: string;
  /** JSON string[] */
  events: string;
  is_active: boolean | number;
  /** sealed */
  secret: string;
  /** sealed, only inside a rotation overlap */
  previous_secret: string | null;
  previous_secret_expires_at: string | null;
  created_at: string;
  updated_at: string;
}

/** A row of a service's endpoints table: the common columns, its scope column and its own (typed by the service's `Row`). */
export interface SubscriptionRow extends SubscriptionColumns {
  [column: string]: unknown;
}

export const webhookEvents = defineTable<EventRow>()("webhook_events", ["id", "type", "data", "created_at"]);

export const webhookDeliveries = defineTable<DeliveryRow>()("webhook_deliveries", [
  "id",
  "event_id",
  "endpoint_id",
  "event_type",
  "body",
  "status",
  "attempts_made",
  "next_attempt_at",
  "next_trigger",
  "auto_retry",
  "send_when_inactive",
  "lease_token",
  "lease_expires_at",
  "created_at",
  "updated_at",
]);

/** The columns of `webhook_deliveries` a claim returns. */
export const claimedDeliveries = defineTable<ClaimedRow>()("webhook_deliveries", [
  "id",
  "event_id",
  "endpoint_id",
  "event_type",
  "body",
  "attempts_made",
  "next_trigger",
  "auto_retry",
  "send_when_inactive",
]);

export const webhookAttempts = defineTable<AttemptRow>()("webhook_attempts", [
  "id",
  "delivery_id",
  "endpoint_id",
  "event_id",
  "event_type",
  "attempt_number",
  "trigger",
  "status_code",
  "success",
  "error",
  "error_detail",
  "response_excerpt",
  "duration_ms",
  "attempted_at",
  "next_attempt_at",
]);

/** Identity's: its API lists attempts. */
export const webhookAttemptCounts = defineTable<AttemptCountRow>()("webhook_attempt_counts", ["endpoint_id", "attempts"]);

/** Email's, on SQLite: its API lists deliveries. */
export const webhookDeliveryCounts = defineTable<DeliveryCountRow>()("webhook_delivery_counts", ["endpoint_id", "deliveries"]);

/** Email's, on PostgreSQL. */
export const webhookDeliveryCountDeltas = defineTable<DeliveryCountDeltaRow>()("webhook_delivery_count_deltas", ["endpoint_id", "n"]);

/** The common columns of the service's endpoints table `name`. */
export const subscriptionsTable = (name: string) =>
  defineTable<SubscriptionColumns>()(name, [
    "id",
    "url",
    "events",
    "is_active",
    "secret",
    "previous_secret",
    "previous_secret_expires_at",
    "created_at",
    "updated_at",
  ]);
