/**
 * The delivery history's total without counting, so that its cost stays flat as deliveries grow: a
 * per-endpoint counter of webhook deliveries kept by triggers, filled from the rows already there.
 * SQLite only (server/webhooks/storage/delivery-records.ts says why); on PostgreSQL it changes nothing.
 */
import type { Migration } from "../../../../server/storage/db.ts";
import { migrateDeliveryCounts } from "../../../../server/webhooks/storage/migrations/delivery-counts.ts";

export const deliveryCounts: Migration = {
  up: migrateDeliveryCounts,
  async down(db) {
    if (db.client.config.client === "pg") {
      await db.raw("DROP TRIGGER IF EXISTS webhook_deliveries_count_insert ON webhook_deliveries");
      await db.raw("DROP TRIGGER IF EXISTS webhook_deliveries_count_delete ON webhook_deliveries");
      await db.raw("DROP FUNCTION IF EXISTS webhook_deliveries_count_insert(), webhook_deliveries_count_delete()");
    } else {
      await db.raw("DROP TRIGGER IF EXISTS webhook_deliveries_count_insert");
      await db.raw("DROP TRIGGER IF EXISTS webhook_deliveries_count_delete");
    }
    await db.schema.dropTableIfExists("webhook_delivery_counts");
  },
};
