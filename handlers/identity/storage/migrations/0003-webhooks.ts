/** Tables of the webhook delivery engine and the identity webhooks. */
import type { Knex } from "knex";
import type { Migration } from "../../../../server/storage/db.ts";

export const webhooks: Migration = {
  async up(_db: Knex) {},
  async down(_db: Knex) {},
};
