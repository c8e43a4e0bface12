/**
 * Resource indicators on the device authorization grant (X-ID-DEV-11, RFC 8707): the resource a
 * device authorization request asked for, carried to the grant its approval makes, so the access
 * tokens name it as `aud`. A nullable column only: an instance of an earlier version never reads it
 * and writes rows without it (null: no resource, the client id is the audience as before), so the
 * step is safe during a rolling upgrade.
 */
import type { Knex } from "knex";
import type { Migration } from "../../../../server/storage/db.ts";

export const deviceResource: Migration = {
  async up(db: Knex) {
    await db.schema.alterTable("device_authorizations", (t) => t.string("resource", 2048).nullable());
  },
  async down(db: Knex) {
    await db.schema.alterTable("device_authorizations", (t) => t.dropColumn("resource"));
  },
};
