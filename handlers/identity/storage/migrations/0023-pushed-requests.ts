/**
 * Pushed authorization requests (RFC 9126, X-ID-PAR-*): one row per `request_uri` handed out,
 * keyed by its hash, and the applications' choice to require them (a nullable column, read as
 * false). A new table and a nullable column only: an instance of an earlier version never reads it, so the
 * step is safe during a rolling upgrade. The expiry index serves the retention purge.
 */
import type { Knex } from "knex";
import type { Migration } from "../../../../server/storage/db.ts";

export const pushedRequests: Migration = {
  async up(db: Knex) {
    // Nullable, read as false: an older instance neither writes nor reads it (X-ID-PAR-5).
    await db.schema.alterTable("applications", (t) => {
      t.boolean("require_pushed_authorization_requests").nullable();
    });
    await db.schema.createTable("oauth_pushed_requests", (t) => {
      t.string("request_uri_hash", 64).primary();
      t.string("application_id", 36).notNullable().references("applications.id").onDelete("CASCADE").index();
      t.text("parameters").notNullable(); // JSON object of the pushed parameters
      t.string("created_at").notNullable();
      t.string("expires_at").notNullable().index();
      t.string("consumed_at").nullable();
    });
  },
  async down(db: Knex) {
    await db.schema.dropTable("oauth_pushed_requests");
    await db.schema.alterTable("applications", (t) => {
      t.dropColumn("require_pushed_authorization_requests");
    });
  },
};
