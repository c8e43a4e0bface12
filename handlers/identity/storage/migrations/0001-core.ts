/** Organizations, their admins, users, applications and client secrets. JSON lists are stored as text. */
import type { Knex } from "knex";
import type { Migration } from "../../../../server/storage/db.ts";
import { createSigningKeysTable } from "../../../../server/keys/store.ts";

export const core: Migration = {
  async up(db: Knex) {
    await createSigningKeysTable(db);
    await db.schema.createTable("server_secrets", (t) => {
      t.string("name", 64).primary();
      t.string("value", 128).notNullable();
      t.string("created_at").notNullable();
    });
    await db.schema.createTable("organizations", (t) => {
      t.string("id", 36).primary();
      t.string("name", 200).notNullable();
      t.string("created_at").notNullable();
    });
    await db.schema.createTable("users", (t) => {
      t.string("id", 36).primary();
      t.string("email", 254).notNullable().unique(); // stored lower-case
      t.text("password_hash"); // null for users who only ever signed in socially
      t.string("first_name", 100).notNullable();
      t.string("last_name", 100).notNullable();
      t.boolean("email_verified").notNullable().defaultTo(false);
      t.string("created_at").notNullable();
      t.string("updated_at").notNullable();
    });
    await db.schema.createTable("organization_admins", (t) => {
      t.string("organization_id", 36).notNullable().references("organizations.id").onDelete("CASCADE");
      t.string("user_id", 36).notNullable().references("users.id").onDelete("CASCADE");
      t.string("created_at").notNullable();
      t.primary(["organization_id", "user_id"]);
    });
    await db.schema.createTable("applications", (t) => {
      t.string("id", 36).primary();
      t.string("organization_id", 36).references("organizations.id").onDelete("CASCADE"); // null: built-in (dashboard)
      t.string("name", 100).notNullable();
      t.string("client_id", 100).notNullable().unique();
      t.string("client_type", 16).notNullable(); // public | confidential
      t.text("redirect_uris").notNullable(); // JSON string[]
      t.text("allowed_scopes").notNullable(); // JSON string[]
      t.text("enabled_providers").notNullable(); // JSON string[]
      t.text("branding").notNullable(); // JSON {logoUrl?, primaryColor?, secondaryColor?}
      t.boolean("first_party").notNullable().defaultTo(false);
      t.string("created_at").notNullable();
      t.string("updated_at").notNullable();
    });
    await db.schema.createTable("client_secrets", (t) => {
      t.string("id", 36).primary();
      t.string("application_id", 36).notNullable().references("applications.id").onDelete("CASCADE").index();
      t.string("secret_hash", 64).notNullable(); // HMAC-SHA256 keyed with server_secrets.client_secret_hmac
      t.string("created_at").notNullable();
      t.string("expires_at"); // null: current; set: retired, still accepted until then (overlap)
    });
    await db.schema.createTable("application_users", (t) => {
      // Who is a user of which application (registered through it or authorized it): user.updated
      // and user.deleted go to these applications' webhooks.
      t.string("application_id", 36).notNullable().references("applications.id").onDelete("CASCADE");
      t.string("user_id", 36).notNullable().references("users.id").onDelete("CASCADE").index();
      t.string("created_at").notNullable();
      t.primary(["application_id", "user_id"]);
    });
    await db.schema.createTable("user_identities", (t) => {
      // Links to upstream (social) identities: provider + subject → user.
      t.string("provider", 32).notNullable();
      t.string("subject", 255).notNullable();
      t.string("user_id", 36).notNullable().references("users.id").onDelete("CASCADE").index();
      t.string("created_at").notNullable();
      t.primary(["provider", "subject"]);
    });
    await db.schema.createTable("registration_attempts", (t) => {
      // POST /api/users is unauthenticated: at most N registrations per client address per hour.
      // Kept in the database, not memory, so every instance counts the same attempts.
      t.increments("id").primary();
      t.string("address", 64).notNullable();
      t.string("at").notNullable();
      t.index(["address", "at"]);
    });
  },
  async down(db: Knex) {
    for (const t of [
      "registration_attempts",
      "user_identities",
      "application_users",
      "client_secrets",
      "applications",
      "organization_admins",
      "users",
      "organizations",
      "server_secrets",
      "signing_keys",
    ]) {
      await db.schema.dropTableIfExists(t);
    }
  },
};
