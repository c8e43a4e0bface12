/**
 * The mail outbox (X-ID-MAIL-1): the messages identity sends, written in the transaction of the
 * change that caused them and delivered by a leased dispatcher. Only a new table: an instance of an
 * earlier version never reads it, so the step is safe during a rolling upgrade. The due index serves
 * the dispatcher's claim, the finish index the retention purge, the creation index the local mailbox.
 */
import type { Knex } from "knex";
import type { Migration } from "../../../../server/storage/db.ts";

export const mailOutbox: Migration = {
  async up(db: Knex) {
    await db.schema.createTable("mail_outbox", (t) => {
      t.string("id", 36).primary();
      t.string("template", 64).notNullable();
      t.string("locale", 35).notNullable();
      t.string("application_id", 36).nullable();
      t.string("recipient", 320).notNullable();
      t.text("subject").notNullable();
      t.text("text_body").nullable();
      t.text("html_body").nullable();
      t.string("status", 16).notNullable(); // pending | sent | failed
      t.integer("attempts").notNullable().defaultTo(0);
      t.string("next_attempt_at").nullable();
      t.string("lease_token", 36).nullable();
      t.string("lease_expires_at").nullable();
      t.text("last_error").nullable();
      t.string("created_at").notNullable();
      t.string("finished_at").nullable();
      t.index(["next_attempt_at"]);
      t.index(["finished_at"]);
      t.index(["created_at"]);
    });
  },
  async down(db: Knex) {
    await db.schema.dropTable("mail_outbox");
  },
};
