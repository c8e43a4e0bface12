/** Tables of the OAuth area (sessions, authorization requests, consents, codes, refresh tokens, sign-in throttling). */
import type { Knex } from "knex";
import type { Migration } from "../../../../server/storage/db.ts";

export const oauth: Migration = {
  async up(_db: Knex) {},
  async down(_db: Knex) {},
};
