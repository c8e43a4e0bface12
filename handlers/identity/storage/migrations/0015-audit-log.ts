/**
 * The audit log (X-ID-AUD-1): one row per security event. A new table only, so an instance of the
 * previous version keeps working beside it (it never writes here). The indexes serve the admin's
 * list, newest first within an organization, by itself or narrowed to a user or an application
 * (X-ID-AUD-4), and the retention purge by time (X-ID-AUD-5).
 */
import type { Knex } from "knex";
import type { Migration } from "../../../../server/storage/db.ts";

export const auditLog: Migration = {
  async up(db: Knex) {
    await db.schema.createTable("audit_events", (t) => {
      t.string("id", 36).primary(); // UUIDv7
      t.string("type", 64).notNullable();
      t.string("occurred_at").notNullable();
      t.string("actor_type", 16).notNullable();
      t.string("actor_id", 36).nullable();
      t.string("user_id", 36).nullable();
      t.string("organization_id", 36).nullable();
      t.string("application_id", 36).nullable();
      t.string("client_address", 64).nullable();
      t.string("user_agent", 512).nullable();
      t.text("details").notNullable();
      t.index(["organization_id", "occurred_at", "id"], "audit_events_org_time");
      t.index(["organization_id", "user_id", "occurred_at", "id"], "audit_events_org_user_time");
      t.index(["organization_id", "application_id", "occurred_at", "id"], "audit_events_org_app_time");
      t.index(["occurred_at"], "audit_events_time");
    });
  },
  async down(db: Knex) {
    await db.schema.dropTable("audit_events");
  },
};
