/**
 * Client credentials and client authentication (X-ID-CC-1..9): the application's settings for the
 * grant and for how it authenticates, and the `jti` of each `private_key_jwt` assertion accepted,
 * kept until the assertion expires so a replay is refused. Nullable columns and a new table only:
 * an instance of an earlier version never reads them and inserts rows without them, so the step
 * is safe during a rolling upgrade (null reads as the setting's default).
 */
import type { Knex } from "knex";
import type { Migration } from "../../../../server/storage/db.ts";

export const clientCredentials: Migration = {
  async up(db: Knex) {
    await db.schema.alterTable("applications", (t) => {
      t.boolean("client_credentials_enabled").nullable();
      t.text("client_credentials_scopes").nullable(); // JSON string[]
      t.text("resources").nullable(); // JSON string[] of absolute URIs (RFC 8707)
      t.string("token_endpoint_auth_method", 32).nullable();
      t.text("jwks").nullable(); // JSON {keys: [...]}, public keys only
      t.string("jwks_uri", 2048).nullable();
    });
    await db.schema.createTable("client_assertion_jtis", (t) => {
      // SHA-256 of the client id and the assertion's jti, base64url: unique deployment-wide.
      t.string("jti", 64).primary();
      t.string("application_id", 36).notNullable().references("applications.id").onDelete("CASCADE").index();
      t.string("expires_at").notNullable().index();
    });
  },
  async down(db: Knex) {
    await db.schema.dropTable("client_assertion_jtis");
    await db.schema.alterTable("applications", (t) => {
      for (const c of [
        "client_credentials_enabled",
        "client_credentials_scopes",
        "resources",
        "token_endpoint_auth_method",
        "jwks",
        "jwks_uri",
      ])
        t.dropColumn(c);
    });
  },
};
