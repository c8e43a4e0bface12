/**
 * RP-Initiated Logout (X-ID-LOGOUT-3): `applications.post_logout_redirect_uris`, the JSON string[]
 * of URIs the end-session endpoint may send the browser back to. Nullable, so an instance that does
 * not know the column keeps inserting applications (null reads as none).
 */
import type { Knex } from "knex";
import type { Migration } from "../../../../server/storage/db.ts";

export const logout: Migration = {
  async up(db: Knex) {
    await db.schema.alterTable("applications", (t) => {
      t.text("post_logout_redirect_uris");
    });
  },
  async down(db: Knex) {
    await db.schema.alterTable("applications", (t) => {
      t.dropColumn("post_logout_redirect_uris");
    });
  },
};
