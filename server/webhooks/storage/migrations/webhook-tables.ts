/**
 * The webhook engine's first tables, created from each service's own migration (identity's and
 * email's `0003-webhooks.ts`): the outbox of events, one delivery per (event, endpoint) and one
 * attempt row per try, and the common columns of the service's endpoints table.
 *
 * Migration steps are history: what they create must not change once a database has run them, so
 * they write their names out rather than take them from ../schema.ts (which says what the tables
 * are now; test/webhooks/schema.test.ts checks that the two agree). A later change is a new step.
 */
import type { Knex } from "knex";

/** Creates the engine's tables (called from a service's migration). */
export async function createDeliveryTables(db: Knex): Promise<void> {
  await db.schema.createTable("webhook_events", (t) => {
    t.string("id", 36).primary();
    t.string("type", 64).notNullable();
    t.text("data").notNullable(); // JSON
    t.string("created_at", 24).notNullable();
  });
  await db.schema.createTable("webhook_deliveries", (t) => {
    t.string("id", 36).primary(); // the delivery id receivers deduplicate by
    t.string("event_id", 36).notNullable();
    t.string("endpoint_id", 36).notNullable().index();
    t.string("event_type", 64).notNullable();
    t.text("body").notNullable(); // the exact bytes sent on every attempt
    t.string("status", 16).notNullable();
    t.integer("attempts_made").notNullable().defaultTo(0);
    t.string("next_attempt_at", 24);
    t.string("next_trigger", 16).notNullable();
    t.boolean("auto_retry").notNullable();
    t.boolean("send_when_inactive").notNullable().defaultTo(false);
    t.string("lease_token", 36);
    t.string("lease_expires_at", 24);
    t.string("created_at", 24).notNullable();
    t.string("updated_at", 24).notNullable();
    t.index(["status", "next_attempt_at"], "webhook_deliveries_due");
  });
  await db.schema.createTable("webhook_attempts", (t) => {
    // No foreign key to the delivery: an attempt that ran while its endpoint was deleted is dropped
    // by the writer, and attempts are history, written in bulk. Few indexes (every one is written
    // per attempt): history is read by endpoint, newest first.
    t.string("id", 36).primary();
    t.string("delivery_id", 36).notNullable();
    t.string("endpoint_id", 36).notNullable();
    t.string("event_id", 36).notNullable();
    t.string("event_type", 64).notNullable();
    t.integer("attempt_number").notNullable();
    t.string("trigger", 16).notNullable();
    t.integer("status_code");
    t.boolean("success").notNullable();
    t.string("error", 32);
    t.string("error_detail", 500);
    t.text("response_excerpt");
    t.integer("duration_ms").notNullable();
    t.string("attempted_at", 24).notNullable();
    t.string("next_attempt_at", 24);
    t.index(["endpoint_id", "attempted_at"], "webhook_attempts_history");
  });
}

export async function dropDeliveryTables(db: Knex): Promise<void> {
  for (const t of ["webhook_attempts", "webhook_deliveries", "webhook_events"]) await db.schema.dropTableIfExists(t);
}

/**
 * The common columns of a service's endpoints table, for its migration (its scope and own columns
 * come beside them): id, url, events (JSON), is_active, secret (sealed), previous_secret (sealed),
 * previous_secret_expires_at, created_at, updated_at.
 */
export function subscriptionColumns(t: Knex.CreateTableBuilder): void {
  t.string("id", 36).primary();
  t.string("url", 2048).notNullable();
  t.text("events").notNullable();
  t.boolean("is_active").notNullable();
  // Signing secrets must be usable to sign, so they cannot be hashed: stored sealed (AES-256-GCM)
  // under a server key, and shown to clients only on create and rotation.
  t.text("secret").notNullable();
  t.text("previous_secret");
  t.string("previous_secret_expires_at", 24);
  t.string("created_at", 24).notNullable();
  t.string("updated_at", 24).notNullable();
}
