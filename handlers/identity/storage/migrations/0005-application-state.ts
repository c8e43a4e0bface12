/**
 * Applications can be disabled (X-ID-TOK-5): `enabled`, and `tokens_not_before`, the moment of the
 * last disabling. Grants (and the codes and pending requests that lead to grants) made before it
 * are ended for good, so enabling the application again does not bring its old tokens back; one
 * column checked on each token use instead of an UPDATE of every grant the application has.
 */
import type { Knex } from "knex";
import type { Migration } from "../../../../server/storage/db.ts";

export const applicationState: Migration = {
  async up(db: Knex) {
    await db.schema.alterTable("applications", (t) => {
      t.boolean("enabled").notNullable().defaultTo(true);
      t.string("tokens_not_before"); // ISO 8601 UTC; null: never disabled
    });
  },
  async down(db: Knex) {
    await db.schema.alterTable("applications", (t) => {
      t.dropColumn("tokens_not_before");
      t.dropColumn("enabled");
    });
  },
};
