/**
 * Email verification (X-ID-EVF-1..7): the links identity mails to prove an address, and the
 * application setting that asks for a verified address before sign-in. A new table and a nullable
 * column only: an instance of an earlier version never reads either (a null setting means "not
 * required"), so the step is safe during a rolling upgrade.
 */
import type { Knex } from "knex";
import type { Migration } from "../../../../server/storage/db.ts";

export const emailVerification: Migration = {
  async up(db: Knex) {
    await db.schema.createTable("email_verifications", (t) => {
      // The SHA-256 storage key of the link's token: the token itself is never stored.
      t.string("token_hash", 64).primary();
      t.string("user_id", 36).notNullable().references("id").inTable("users").onDelete("CASCADE");
      t.string("email", 320).notNullable();
      t.string("purpose", 16).notNullable(); // address | change
      t.string("application_id", 36).nullable();
      t.text("return_to").nullable();
      t.string("created_at").notNullable();
      t.string("expires_at").notNullable();
      t.string("consumed_at").nullable();
      // The resend limit counts a user's recent links; the pending change is the newest live one.
      t.index(["user_id", "created_at"]);
      t.index(["expires_at"]);
    });
    await db.schema.alterTable("applications", (t) => {
      t.boolean("require_verified_email").nullable();
    });
  },
  async down(db: Knex) {
    await db.schema.alterTable("applications", (t) => {
      t.dropColumn("require_verified_email");
    });
    await db.schema.dropTable("email_verifications");
  },
};
