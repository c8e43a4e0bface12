/**
 * Retention (storage/retention-rules.ts): the indexes its rules and their cascades need, so that
 * no batch and no cascaded delete scans a table.
 * - `idempotency_keys (created_at)`: keys are forgotten after their 24-hour window;
 * - `idempotency_keys (email_id)`: deleting a message cascades into its key (SQLite finds the child
 *   rows of a foreign key only through an index on the child column);
 * - `webhook_events (created_at)`: the webhook history rule for events;
 * - `webhook_attempts (delivery_id)`: the delivery history reads each listed delivery's attempts
 *   by it, which without an index walked every attempt ever made.
 * The messages rule walks `emails_recent (created_at, id)`, which 0002 made.
 */
import type { Knex } from "knex";
import type { Migration } from "../../../../server/storage/db.ts";

const INDEXES: Array<[table: string, column: string, name: string]> = [
  ["idempotency_keys", "created_at", "idempotency_keys_by_created_at"],
  ["idempotency_keys", "email_id", "idempotency_keys_by_email"],
  ["webhook_events", "created_at", "webhook_events_by_created_at"],
  ["webhook_attempts", "delivery_id", "webhook_attempts_by_delivery"],
];

export const retention: Migration = {
  async up(db: Knex) {
    // IF NOT EXISTS: a large PostgreSQL deployment may have built them beforehand, CONCURRENTLY (docs/operations.md, "Data growth").
    for (const [table, column, name] of INDEXES) await db.raw(`CREATE INDEX IF NOT EXISTS ${name} ON ${table} (${column})`);
  },
  async down(db: Knex) {
    for (const [table, , name] of INDEXES) await db.schema.alterTable(table, (t) => t.dropIndex([], name));
  },
};
