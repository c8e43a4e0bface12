/**
 * Resource indicators on the authorization code flow (X-ID-RES-1..5, RFC 8707): the application's
 * API scopes, and the resource an authorization request asked for, carried by its pending request,
 * its code and the grant the code makes, so every access token of that grant names it as `aud`.
 * Nullable columns only: an instance of an earlier version never reads them and writes rows
 * without them (null: no resource, the client id is the audience as before), so the step is safe
 * during a rolling upgrade.
 */
import type { Knex } from "knex";
import type { Migration } from "../../../../server/storage/db.ts";

const RESOURCE_TABLES = ["oauth_requests", "oauth_codes", "oauth_grants"] as const;

export const resourceIndicators: Migration = {
  async up(db: Knex) {
    await db.schema.alterTable("applications", (t) => {
      t.text("api_scopes").nullable(); // JSON string[]; null is none
    });
    for (const table of RESOURCE_TABLES) await db.schema.alterTable(table, (t) => t.string("resource", 2048).nullable());
  },
  async down(db: Knex) {
    for (const table of RESOURCE_TABLES) await db.schema.alterTable(table, (t) => t.dropColumn("resource"));
    await db.schema.alterTable("applications", (t) => t.dropColumn("api_scopes"));
  },
};
