/** Schema of the repository-and-build service. Timestamps are ISO 8601 UTC strings (sortable, the same on both drivers). */
import type { Knex } from "knex";
import type { Migration } from "../../../server/storage/db.ts";
import { createSigningKeysTable, keyRingMigration } from "../../../server/keys/store.ts";

export const migrations: Record<string, Migration> = {
  "0001_initial": {
    async up(db: Knex) {
      await createSigningKeysTable(db);
      await db.schema.createTable("users", (t) => {
        t.string("id", 36).primary();
        t.string("email", 254).notNullable().unique();
        t.text("password_hash").notNullable();
        t.string("created_at").notNullable();
      });
      await db.schema.createTable("login_failures", (t) => {
        t.increments("id");
        t.string("email", 254).notNullable().index();
        t.string("failed_at").notNullable();
      });
      await db.schema.createTable("refresh_tokens", (t) => {
        t.string("id", 36).primary(); // the token's jti
        t.string("family_id", 36).notNullable().index();
        t.string("user_id", 36).notNullable().references("users.id").onDelete("CASCADE");
        t.string("token_hash", 64).notNullable();
        t.string("expires_at").notNullable();
        t.string("used_at");
        t.string("revoked_at");
        t.string("created_at").notNullable();
      });
      await db.schema.createTable("repositories", (t) => {
        t.string("id", 36).primary();
        t.string("owner_id", 36).notNullable().references("users.id").onDelete("CASCADE");
        t.string("name", 100).notNullable();
        t.string("description", 500).notNullable();
        t.string("default_branch", 255).notNullable();
        t.string("created_at").notNullable();
        t.unique(["owner_id", "name"]);
      });
      await db.schema.createTable("agents", (t) => {
        t.string("id", 36).primary();
        t.string("owner_id", 36).notNullable().references("users.id").onDelete("CASCADE");
        t.string("name", 100).notNullable();
        t.string("created_at").notNullable();
        t.string("last_seen_at");
        t.string("revoked_at");
      });
      await db.schema.createTable("builds", (t) => {
        t.string("id", 36).primary();
        t.string("repository_id", 36).notNullable().references("repositories.id").onDelete("CASCADE");
        t.string("owner_id", 36).notNullable().index();
        t.string("ref", 255).notNullable();
        t.string("status", 16).notNullable();
        t.string("agent_id", 36);
        t.string("created_at").notNullable();
        t.string("started_at");
        t.string("finished_at");
        t.index(["owner_id", "status", "created_at"]);
      });
    },
    async down(db: Knex) {
      for (const table of ["builds", "agents", "repositories", "refresh_tokens", "login_failures", "users", "signing_keys"]) {
        await db.schema.dropTableIfExists(table);
      }
    },
  },
  /**
   * The shared sign-in throttle (server/security/sign-in-throttle.ts; X-RB-6, X-RB-9): failures by
   * key (the account, the client address, the account at that address) instead of by email only,
   * and the addresses each account signed in from. The per-email failures still in their window
   * carry over as account failures.
   */
  "0002_sign_in_throttle": {
    async up(db: Knex) {
      await db.schema.createTable("signin_failures", (t) => {
        t.increments("id");
        t.string("key", 320).notNullable();
        t.string("failed_at").notNullable();
        t.index(["key", "failed_at"]);
        t.index(["failed_at"]); // pruning old rows
      });
      await db.schema.createTable("signin_known_addresses", (t) => {
        t.string("key", 320).primary();
        t.string("last_success_at").notNullable();
        t.index(["last_success_at"]);
      });
      await db.raw("INSERT INTO signin_failures (key, failed_at) SELECT 'account:' || email, failed_at FROM login_failures");
      await db.schema.dropTable("login_failures");
    },
    async down(db: Knex) {
      await db.schema.createTable("login_failures", (t) => {
        t.increments("id");
        t.string("email", 254).notNullable().index();
        t.string("failed_at").notNullable();
      });
      await db.raw(
        "INSERT INTO login_failures (email, failed_at) SELECT substr(key, 9), failed_at FROM signin_failures WHERE key LIKE 'account:%'",
      );
      await db.schema.dropTable("signin_known_addresses");
      await db.schema.dropTable("signin_failures");
    },
  },
  /** Signing keys an operator can rotate (X-RB-11): the user and agent keys become rings (server/keys/store.ts). */
  "0003_signing_key_ring": keyRingMigration,
  /**
   * Revocation becomes a property of the family (X-RB-12): a row per revoked family, which every
   * refresh checks in the same conditional write that retires its token. Until now a revocation
   * marked the family's token rows that existed, so one a racing refresh inserted a moment later
   * escaped it; each family with a revoked token is revoked here, which ends those escaped tokens
   * too. `refresh_tokens.revoked_at` stays: the service still writes it beside the family row, so
   * an instance of an earlier version, which reads only it, refuses a revoked family's tokens
   * while a rolling upgrade runs, and this version reads it too, for revocations such an instance
   * makes.
   */
  "0004_revoked_refresh_families": {
    async up(db: Knex) {
      await db.schema.createTable("revoked_refresh_families", (t) => {
        t.string("family_id", 36).primary();
        t.string("revoked_at").notNullable();
      });
      await db.raw(
        "INSERT INTO revoked_refresh_families (family_id, revoked_at) " +
          "SELECT family_id, MIN(revoked_at) FROM refresh_tokens WHERE revoked_at IS NOT NULL GROUP BY family_id",
      );
    },
    async down(db: Knex) {
      // What an earlier version reads: every token of a revoked family marked revoked.
      await db.raw(
        "UPDATE refresh_tokens SET revoked_at = (SELECT f.revoked_at FROM revoked_refresh_families f WHERE f.family_id = refresh_tokens.family_id) " +
          "WHERE revoked_at IS NULL AND family_id IN (SELECT family_id FROM revoked_refresh_families)",
      );
      await db.schema.dropTable("revoked_refresh_families");
    },
  },
  /**
   * Users of the trusted issuer (X-RB-15): the link from a token's `iss` and `sub` to the repository
   * user created on its first use. A new table only, so an instance of an earlier version keeps
   * working beside it (it never reads it, and such users cannot sign in with a password anyway).
   */
  "0005_external_accounts": {
    async up(db: Knex) {
      await db.schema.createTable("external_accounts", (t) => {
        t.string("issuer", 2048).notNullable();
        t.string("subject", 255).notNullable();
        t.string("user_id", 36).notNullable().unique().references("users.id").onDelete("CASCADE");
        t.string("created_at").notNullable();
        t.primary(["issuer", "subject"]);
      });
    },
    async down(db: Knex) {
      await db.schema.dropTable("external_accounts");
    },
  },
};
