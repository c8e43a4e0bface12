/**
 * What the account page shows of each single sign-on session (X-ID-ACCT-3): the browser's
 * `User-Agent` and the client address at sign-in, and when the session was last used. Nullable
 * columns only, so an instance that predates them keeps inserting sessions (rolling upgrade); such
 * a session shows as an unknown device until it is used.
 */
import type { Knex } from "knex";
import type { Migration } from "../../../../server/storage/db.ts";

export const sessionDevices: Migration = {
  async up(db: Knex) {
    await db.schema.alterTable("oauth_sessions", (t) => {
      // A User-Agent is kept to 512 characters (storage/sessions.ts cuts it), an address to an IPv6 text form.
      t.string("user_agent", 512);
      t.string("ip_address", 64);
      t.string("last_used_at");
    });
  },
  async down(db: Knex) {
    await db.schema.alterTable("oauth_sessions", (t) => {
      t.dropColumn("user_agent");
      t.dropColumn("ip_address");
      t.dropColumn("last_used_at");
    });
  },
};
