/**
 * Tables of the OAuth area: sessions, pending authorization requests, consents, codes, grants,
 * refresh tokens, revoked access tokens and sign-in throttling. Every secret (session id, code,
 * refresh token) is stored as its SHA-256 only; times are ISO 8601 UTC strings, which compare
 * correctly as text on SQLite and PostgreSQL.
 */
import type { Knex } from "knex";
import type { Migration } from "../../../../server/storage/db.ts";

export const oauth: Migration = {
  async up(db: Knex) {
    await db.schema.createTable("oauth_sessions", (t) => {
      // Single sign-on sessions (X-ID-SESS-1): the cookie carries the id, the table its hash.
      t.string("id_hash", 64).primary();
      t.string("user_id", 36).notNullable().references("users.id").onDelete("CASCADE").index();
      t.string("auth_time").notNullable();
      t.string("created_at").notNullable();
      t.string("expires_at").notNullable();
    });
    await db.schema.createTable("oauth_requests", (t) => {
      // Pending authorization requests, one per request_id, so several tabs can authorize at once.
      t.string("id", 36).primary();
      t.string("application_id", 36).notNullable().references("applications.id").onDelete("CASCADE");
      t.string("redirect_uri", 2048).notNullable();
      t.text("scopes").notNullable(); // JSON string[]
      t.text("state"); // 1024 max, checked before insert
      t.string("code_challenge", 128);
      t.string("code_challenge_method", 8);
      t.text("nonce");
      t.string("prompt", 32);
      t.string("created_at").notNullable();
      t.string("expires_at").notNullable().index();
    });
    await db.schema.createTable("oauth_consents", (t) => {
      // Scopes a user has granted an application (X-ID-AZ-2).
      t.string("user_id", 36).notNullable().references("users.id").onDelete("CASCADE");
      t.string("application_id", 36).notNullable().references("applications.id").onDelete("CASCADE");
      t.text("scopes").notNullable(); // JSON string[]
      t.string("updated_at").notNullable();
      t.primary(["user_id", "application_id"]);
    });
    await db.schema.createTable("oauth_grants", (t) => {
      // What one code exchange granted: the refresh-token family and the access tokens issued from
      // it (their jti starts with the grant id). Revoking the grant revokes them all.
      t.string("id", 36).primary();
      t.string("application_id", 36).notNullable().references("applications.id").onDelete("CASCADE");
      t.string("user_id", 36).notNullable().references("users.id").onDelete("CASCADE").index();
      t.text("scopes").notNullable(); // JSON string[]
      t.string("auth_time").notNullable();
      t.string("created_at").notNullable();
      t.string("revoked_at");
    });
    await db.schema.createTable("oauth_codes", (t) => {
      t.string("code_hash", 64).primary();
      t.string("grant_id", 36).notNullable(); // the grant its exchange creates (revoked on replay)
      t.string("application_id", 36).notNullable().references("applications.id").onDelete("CASCADE");
      t.string("user_id", 36).notNullable().references("users.id").onDelete("CASCADE");
      t.string("redirect_uri", 2048).notNullable();
      t.text("scopes").notNullable(); // JSON string[]
      t.string("code_challenge", 128);
      t.string("code_challenge_method", 8);
      t.text("nonce");
      t.string("auth_time").notNullable();
      t.string("created_at").notNullable();
      t.string("expires_at").notNullable();
      t.string("consumed_at"); // set once, by one conditional UPDATE (single use)
    });
    await db.schema.createTable("oauth_refresh_tokens", (t) => {
      t.string("id", 36).primary();
      t.string("token_hash", 64).notNullable().unique();
      t.string("grant_id", 36).notNullable().references("oauth_grants.id").onDelete("CASCADE").index();
      t.string("parent_id", 36); // the token this one replaced
      t.string("created_at").notNullable();
      t.string("expires_at").notNullable();
      t.string("used_at"); // rotated: set once, by one conditional UPDATE
      t.string("child_id", 36); // the token that replaced it
      // The answer of its rotation, AES-256-GCM under a server key, for the 30-second grace window
      // (a concurrent retry gets the same pair); erased when the child is rotated in turn.
      t.text("rotation_answer");
    });
    await db.schema.createTable("oauth_revoked_access_tokens", (t) => {
      // Access tokens revoked one by one (RFC 7009); kept until they would have expired.
      t.string("jti", 80).primary();
      t.string("expires_at").notNullable();
    });
    await db.schema.createTable("oauth_social_states", (t) => {
      // Social sign-in in flight: our `state` towards the upstream (hashed), the pending request it
      // continues, and the PKCE verifier and nonce (encrypted). Single use, 10 minutes.
      t.string("state_hash", 64).primary();
      t.string("request_id", 36).notNullable();
      t.string("provider", 32).notNullable();
      t.text("secrets").notNullable(); // AES-256-GCM of {codeVerifier, nonce}
      t.string("created_at").notNullable();
      t.string("expires_at").notNullable();
    });
    await db.schema.createTable("oauth_signin_failures", (t) => {
      // Failed password sign-ins by key (`account:<email>` or `address:<ip>`) (X-ID-AZ-3).
      t.increments("id");
      t.string("key", 300).notNullable();
      t.string("failed_at").notNullable();
      t.index(["key", "failed_at"]);
    });
  },
  async down(db: Knex) {
    for (const t of [
      "oauth_signin_failures",
      "oauth_social_states",
      "oauth_revoked_access_tokens",
      "oauth_refresh_tokens",
      "oauth_codes",
      "oauth_grants",
      "oauth_consents",
      "oauth_requests",
      "oauth_sessions",
    ]) {
      await db.schema.dropTableIfExists(t);
    }
  },
};
