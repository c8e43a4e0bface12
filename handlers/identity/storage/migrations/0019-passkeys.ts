/**
 * Passkeys (X-ID-PK-1..8): the WebAuthn credentials of each user and the challenges of
 * registrations and passkey sign-ins. How a session signed in (`oauth_sessions.amr`) is migration
 * 0013's column. New tables only: an instance of an earlier version never reads them, so the step
 * is safe during a rolling upgrade. The expiry index serves the retention purge of challenges.
 */
import type { Knex } from "knex";
import type { Migration } from "../../../../server/storage/db.ts";

export const passkeys: Migration = {
  async up(db: Knex) {
    await db.schema.createTable("passkeys", (t) => {
      t.string("id", 36).primary();
      // The credential id (base64url) names the credential to the authenticator: unique deployment-wide.
      t.string("credential_id", 1400).notNullable().unique();
      t.string("user_id", 36).notNullable().references("users.id").onDelete("CASCADE").index();
      t.string("name", 64).notNullable();
      t.text("public_key").notNullable(); // COSE key, base64url
      t.bigInteger("counter").notNullable().defaultTo(0);
      t.text("transports").notNullable(); // JSON string[]
      t.string("device_type", 16).notNullable(); // singleDevice | multiDevice
      t.boolean("backed_up").notNullable();
      t.string("created_at").notNullable();
      t.string("last_used_at").nullable();
    });
    await db.schema.createTable("passkey_challenges", (t) => {
      t.string("challenge", 64).primary();
      t.string("purpose", 16).notNullable(); // registration | authentication
      // What the challenge is bound to: the session's id hash (registration) or the authorization request (sign-in).
      t.string("binding", 64).notNullable();
      t.string("user_id", 36).nullable();
      t.string("expires_at").notNullable().index();
      t.string("consumed_at").nullable();
    });
  },
  async down(db: Knex) {
    await db.schema.dropTable("passkey_challenges");
    await db.schema.dropTable("passkeys");
  },
};
