/**
 * Password resets (X-ID-RST-1..7): one row per request of a reset link, for an account or not, so
 * that every request does the same write (X-ID-RST-1) and the limits count them (X-ID-RST-6).
 * Only a new table: an instance of an earlier version never reads it, so the step is safe during a
 * rolling upgrade. The token is stored as its SHA-256 only; `user_id` is null for an address with
 * no account to reset. Indexes: the token's hash (unique: the link's lookup), the limits' counts by
 * email and by client address within a window, a user's open links (ended by a newer one or by a
 * reset), the application (its deletion's SET NULL), and the creation time for the retention purge.
 */
import type { Knex } from "knex";
import type { Migration } from "../../../../server/storage/db.ts";

export const passwordResets: Migration = {
  async up(db: Knex) {
    await db.schema.createTable("password_resets", (t) => {
      t.string("id", 36).primary();
      t.string("token_hash", 64).notNullable().unique("password_resets_by_token_hash");
      t.string("user_id", 36).nullable().references("users.id").onDelete("CASCADE");
      t.string("email_key", 64).notNullable(); // SHA-256 of the lower-cased address asked for
      t.string("client_address", 64).notNullable(); // the limits' bucket (IPv6 by /64)
      t.string("application_id", 36).nullable().references("applications.id").onDelete("SET NULL");
      t.text("return_to").nullable(); // the sign-in of the authorization request the user came from
      t.string("created_at").notNullable();
      t.string("expires_at").notNullable();
      t.string("used_at").nullable();
      t.string("ended_at").nullable();
      t.index(["email_key", "created_at"], "password_resets_by_email");
      t.index(["client_address", "created_at"], "password_resets_by_address");
      t.index(["user_id"], "password_resets_by_user");
      t.index(["application_id"], "password_resets_by_application"); // the SET NULL when an application goes
      t.index(["created_at"], "password_resets_by_created_at");
    });
  },
  async down(db: Knex) {
    await db.schema.dropTable("password_resets");
  },
};
