/**
 * Second factors (X-ID-MFA-*): the factors a user enrolled (one TOTP per user today; passkeys are
 * another `kind` of the same table), their recovery codes (hashed, single use), the second-factor
 * step of a sign-in in flight (hashed, short-lived), the authentication methods a session, a code
 * and a grant were made with (`amr`, RFC 8176), and the policy of an organization or application.
 *
 * Safe for a rolling upgrade: new tables and nullable columns only, so an instance of the previous
 * version keeps reading and writing (its rows carry no `amr`, read as a password sign-in).
 */
import type { Knex } from "knex";
import type { Migration } from "../../../../server/storage/db.ts";

export const secondFactor: Migration = {
  async up(db: Knex) {
    await db.schema.createTable("identity_factors", (t) => {
      // The id names the factor: `totp:<user id>` for the one TOTP of a user, a credential id for a passkey.
      t.string("id", 255).primary();
      t.string("user_id", 36).notNullable().references("users.id").onDelete("CASCADE").index();
      t.string("kind", 16).notNullable();
      t.text("secret").notNullable(); // sealed (AES-256-GCM), never the plain secret
      t.bigInteger("last_step"); // the last TOTP time step accepted: a code of it or before is refused
      t.string("created_at").notNullable();
      t.string("confirmed_at"); // null while enrolment waits for its first code
      t.string("last_used_at");
    });
    await db.schema.createTable("identity_recovery_codes", (t) => {
      t.string("code_hash", 64).primary();
      t.string("user_id", 36).notNullable().references("users.id").onDelete("CASCADE").index();
      t.string("created_at").notNullable();
      t.string("used_at");
    });
    await db.schema.createTable("identity_factor_challenges", (t) => {
      // A sign-in whose first factor passed, waiting for the second: the cookie carries the id, the row its hash.
      t.string("id_hash", 64).primary();
      t.string("user_id", 36).notNullable().references("users.id").onDelete("CASCADE").index();
      t.string("request_id", 36).notNullable();
      t.string("amr", 64).notNullable(); // the methods already passed, space-separated
      t.string("created_at").notNullable();
      t.string("expires_at").notNullable().index();
    });
    await db.schema.alterTable("oauth_sessions", (t) => {
      t.string("amr", 64);
    });
    await db.schema.alterTable("oauth_codes", (t) => {
      t.string("amr", 64);
    });
    await db.schema.alterTable("oauth_grants", (t) => {
      t.string("amr", 64);
    });
    await db.schema.alterTable("organizations", (t) => {
      t.string("mfa_policy", 16); // null: optional
    });
    await db.schema.alterTable("applications", (t) => {
      t.string("mfa_policy", 16); // null: the organization's
    });
  },
  async down(db: Knex) {
    await db.schema.alterTable("applications", (t) => t.dropColumn("mfa_policy"));
    await db.schema.alterTable("organizations", (t) => t.dropColumn("mfa_policy"));
    await db.schema.alterTable("oauth_grants", (t) => t.dropColumn("amr"));
    await db.schema.alterTable("oauth_codes", (t) => t.dropColumn("amr"));
    await db.schema.alterTable("oauth_sessions", (t) => t.dropColumn("amr"));
    await db.schema.dropTable("identity_factor_challenges");
    await db.schema.dropTable("identity_recovery_codes");
    await db.schema.dropTable("identity_factors");
  },
};
