/**
 * The shared sign-in throttle (server/security/sign-in-throttle.ts; X-ID-AZ-3, X-ID-AZ-4): the
 * addresses each account signed in from, which its account-wide slowdown spares. Failures stay in
 * `oauth_signin_failures`, now also under `pair:<address>|<email>` keys (the column already takes
 * any key). The time index serves the retention purge.
 */
import type { Knex } from "knex";
import type { Migration } from "../../../../server/storage/db.ts";

export const signInThrottle: Migration = {
  async up(db: Knex) {
    await db.schema.createTable("oauth_signin_known_addresses", (t) => {
      t.string("key", 320).primary(); // pair:<address>|<email>
      t.string("last_success_at").notNullable();
      t.index(["last_success_at"]);
    });
  },
  async down(db: Knex) {
    await db.schema.dropTable("oauth_signin_known_addresses");
  },
};
