/**
 * The device authorization grant (X-ID-DEV-1..8): one row per device authorization, and the
 * wrong user codes typed on the verification page (X-ID-DEV-4), plus the applications' nullable
 * `device_authorization` setting (null, as on every older row, is off). New tables and a nullable
 * column only: an instance of an earlier version never reads them, so the step is safe during a
 * rolling upgrade. The expiry and time indexes serve the retention purge, and every foreign key
 * has an index for its cascade.
 */
import type { Knex } from "knex";
import type { Migration } from "../../../../server/storage/db.ts";

export const deviceAuthorization: Migration = {
  async up(db: Knex) {
    await db.schema.alterTable("applications", (t) => {
      t.boolean("device_authorization").nullable();
    });
    await db.schema.createTable("device_authorizations", (t) => {
      t.string("id", 36).primary();
      // Both codes are stored as their keyed hashes only (X-ID-DEV-2).
      t.string("device_code_hash", 64).notNullable().unique();
      t.string("user_code_hash", 64).notNullable().unique();
      t.string("application_id", 36).notNullable().references("applications.id").onDelete("CASCADE").index();
      t.text("scopes").notNullable(); // JSON string[]
      t.string("created_at").notNullable();
      t.string("expires_at").notNullable().index();
      t.integer("interval_seconds").notNullable();
      t.string("last_polled_at").nullable();
      t.string("status", 16).notNullable(); // pending | approved | denied | redeemed
      t.string("user_id", 36).nullable().references("users.id").onDelete("CASCADE").index();
      t.string("auth_time").nullable();
      t.text("amr").nullable();
      t.string("decided_at").nullable();
    });
    await db.schema.createTable("device_code_guesses", (t) => {
      t.increments("id").primary();
      // `user:<id>` or `address:<bucket>`: what X-ID-DEV-4 counts wrong guesses by.
      t.string("subject", 128).notNullable();
      t.string("at").notNullable();
      t.index(["subject", "at"]);
      // The retention purge's batches, oldest first.
      t.index(["at"]);
    });
  },
  async down(db: Knex) {
    await db.schema.dropTable("device_code_guesses");
    await db.schema.dropTable("device_authorizations");
    await db.schema.alterTable("applications", (t) => {
      t.dropColumn("device_authorization");
    });
  },
};
