/**
 * Indexes for a database that grows to millions of rows, each serving one query that otherwise
 * scans a whole table (docs/operations.md, "Data growth"):
 * - every admin-authenticated request reads an admin's organizations by `user_id`, in order;
 * - deleting a user cascades into `oauth_codes` by `user_id` (SQLite finds the child rows of a
 *   foreign key only through an index on the child column; without one, a full scan per delete);
 * - the retention purge (storage/retention-rules.ts) finds expired rows by their time column;
 * - the delivery history pages by a keyset over an index in its own order, with its exact total
 *   kept in a counter (server/webhooks/storage/attempt-history.ts).
 * Webhook deliveries and attempts need no time index for the purge: their ids are UUIDv7, so the
 * primary key is already in creation order.
 */
import type { Knex } from "knex";
import type { Migration } from "../../../../server/storage/db.ts";
import { migrateAttemptHistory } from "../../../../server/webhooks/storage/migrations/attempt-history.ts";

const TIME_INDEXES: Array<[table: string, column: string]> = [
  ["oauth_codes", "expires_at"],
  ["oauth_refresh_tokens", "expires_at"],
  ["oauth_revoked_access_tokens", "expires_at"],
  ["oauth_sessions", "expires_at"],
  ["oauth_social_states", "expires_at"],
  ["oauth_signin_failures", "failed_at"],
  ["registration_attempts", "at"],
  ["webhook_events", "created_at"],
];

export const growth: Migration = {
  async up(db: Knex) {
    // (user_id, created_at, organization_id): the admin's organizations in order from the index alone.
    await db.schema.alterTable("organization_admins", (t) =>
      t.index(["user_id", "created_at", "organization_id"], "organization_admins_by_user"),
    );
    await db.schema.alterTable("oauth_codes", (t) => t.index(["user_id"], "oauth_codes_by_user"));
    for (const [table, column] of TIME_INDEXES) await db.schema.alterTable(table, (t) => t.index([column], `${table}_by_${column}`));
    await migrateAttemptHistory(db);
  },
  async down() {
    throw new Error("0004_growth cannot be undone: restore a backup instead");
  },
};
