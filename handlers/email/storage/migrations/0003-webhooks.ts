/**
 * Email's webhook subscriptions (the shared shape of server/webhooks/subscriptions.ts, in one
 * deployment-wide scope), the delivery engine's tables, and the server secrets (the key that
 * seals webhook secrets, the key that signs tracking tokens).
 */
import type { Knex } from "knex";
import type { Migration } from "../../../../server/storage/db.ts";
import {
  createDeliveryTables,
  dropDeliveryTables,
  subscriptionColumns,
} from "../../../../server/webhooks/storage/migrations/webhook-tables.ts";

export const webhooks: Migration = {
  async up(db: Knex) {
    await db.schema.createTable("webhooks", (t) => {
      subscriptionColumns(t);
      t.string("scope", 36).notNullable();
      t.string("description", 512).notNullable().defaultTo("");
      t.index(["scope", "created_at"], "webhooks_by_scope");
    });
    await createDeliveryTables(db);
    // Email's history lists deliveries (with their attempts), newest first.
    await db.schema.alterTable("webhook_deliveries", (t) => t.index(["endpoint_id", "created_at", "id"], "webhook_deliveries_history"));
    await db.schema.createTable("server_secrets", (t) => {
      t.string("name", 64).primary();
      t.text("value").notNullable();
      t.string("created_at", 24).notNullable();
    });
  },
  async down(db: Knex) {
    await db.schema.dropTableIfExists("server_secrets");
    await dropDeliveryTables(db);
    await db.schema.dropTableIfExists("webhooks");
  },
};
