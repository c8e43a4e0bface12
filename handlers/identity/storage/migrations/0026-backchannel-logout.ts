/**
 * OpenID Connect Back-Channel Logout (X-ID-LOGOUT-6..11). Safe during a rolling upgrade: only
 * nullable columns and new tables, so an instance of the earlier version keeps inserting codes,
 * grants and applications (a null `sid` reads as "no session id", a null setting as none).
 *
 * - `oauth_codes.sid`, `oauth_grants.sid`: the session id (`sid`) the ID tokens of the code and of
 *   its grant's refreshes carry.
 * - `applications.backchannel_logout_uri`, `applications.backchannel_logout_session_required`.
 * - `oauth_session_applications`: the applications a session signed into (one row per pair), gone
 *   with the session or the application (cascades).
 * - `backchannel_logouts`: the outbox of logout tokens to send, written in the session end's
 *   transaction and sent by a leased dispatcher; the due index serves the claim, the finish index
 *   the retention purge, the application index the cascade.
 */
import type { Knex } from "knex";
import type { Migration } from "../../../../server/storage/db.ts";

export const backchannelLogout: Migration = {
  async up(db: Knex) {
    await db.schema.alterTable("oauth_codes", (t) => {
      t.string("sid", 64).nullable();
    });
    await db.schema.alterTable("oauth_grants", (t) => {
      t.string("sid", 64).nullable();
    });
    await db.schema.alterTable("applications", (t) => {
      t.string("backchannel_logout_uri", 2048).nullable();
      t.boolean("backchannel_logout_session_required").nullable();
    });
    await db.schema.createTable("oauth_session_applications", (t) => {
      t.string("session_id_hash", 64).notNullable().references("oauth_sessions.id_hash").onDelete("CASCADE");
      t.string("application_id", 36).notNullable().references("applications.id").onDelete("CASCADE").index();
      t.string("created_at").notNullable();
      t.primary(["session_id_hash", "application_id"]);
    });
    await db.schema.createTable("backchannel_logouts", (t) => {
      t.string("id", 36).primary();
      t.string("application_id", 36).notNullable().references("applications.id").onDelete("CASCADE").index();
      // No reference to users: a logout token still goes out after the user is deleted.
      t.string("user_id", 36).notNullable();
      t.string("sid", 64).notNullable();
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
    });
  },
  async down(db: Knex) {
    await db.schema.dropTable("backchannel_logouts");
    await db.schema.dropTable("oauth_session_applications");
    await db.schema.alterTable("applications", (t) => {
      t.dropColumn("backchannel_logout_uri");
      t.dropColumn("backchannel_logout_session_required");
    });
    await db.schema.alterTable("oauth_grants", (t) => {
      t.dropColumn("sid");
    });
    await db.schema.alterTable("oauth_codes", (t) => {
      t.dropColumn("sid");
    });
  },
};
