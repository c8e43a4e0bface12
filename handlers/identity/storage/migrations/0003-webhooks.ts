/** Tables of the webhook delivery engine (outbox, deliveries, attempts) and identity's webhook subscriptions. */
import type { Knex } from "knex";
import type { Migration } from "../../../../server/storage/db.ts";
import { createDeliveryTables, dropDeliveryTables } from "../../../../server/webhooks/storage/migrations/webhook-tables.ts";

export const webhooks: Migration = {
  async up(db: Knex) {
    await db.schema.createTable("webhooks", (t) => {
      t.string("id", 36).primary();
      t.string("organization_id", 36).notNullable().references("organizations.id").onDelete("CASCADE");
      t.string("application_id", 36).notNullable().references("applications.id").onDelete("CASCADE");
      t.string("url", 2048).notNullable();
      t.text("events").notNullable(); // JSON string[]
      t.boolean("is_active").notNullable();
      t.integer("max_retries").notNullable();
      t.integer("retry_delay_seconds").notNullable();
      // Signing secrets must be usable to sign, so they cannot be hashed: stored sealed (AES-256-GCM)
      // under a server key, and shown to clients only on create and regenerate.
      t.text("secret").notNullable();
      t.text("previous_secret"); // kept for the rotation overlap only
      t.string("previous_secret_expires_at", 24);
      t.string("created_at", 24).notNullable();
      t.string("updated_at", 24).notNullable();
      t.index(["application_id", "created_at"], "webhooks_by_application");
    });
    await createDeliveryTables(db);
  },
  async down(db: Knex) {
    await dropDeliveryTables(db);
    await db.schema.dropTableIfExists("webhooks");
  },
};
