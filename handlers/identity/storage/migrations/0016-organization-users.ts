/**
 * What organizations' admins manage of their users (X-ID-UADM-*): `organization_user_blocks`, one
 * row while an admin has disabled a user for the organization, and
 * `application_users.last_sign_in_at`, when the user last signed in to the application. Safe for a
 * rolling upgrade: a new table and a nullable column, which an older instance never reads.
 */
import type { Knex } from "knex";
import type { Migration } from "../../../../server/storage/db.ts";

export const organizationUsers: Migration = {
  async up(db: Knex) {
    await db.schema.createTable("organization_user_blocks", (t) => {
      t.string("organization_id", 36).notNullable().references("organizations.id").onDelete("CASCADE");
      t.string("user_id", 36).notNullable().references("users.id").onDelete("CASCADE").index();
      t.string("created_at").notNullable();
      t.primary(["organization_id", "user_id"]);
    });
    await db.schema.alterTable("application_users", (t) => {
      t.string("last_sign_in_at"); // ISO 8601 UTC; null: not since this column exists
    });
  },
  async down(db: Knex) {
    await db.schema.alterTable("application_users", (t) => t.dropColumn("last_sign_in_at"));
    await db.schema.dropTable("organization_user_blocks");
  },
};
