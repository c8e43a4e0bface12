/**
 * What a large database still lacked after 0004 (docs/operations.md, "Data growth"):
 * - An index on every foreign-key column that lacked one. Deleting an application cascades into
 *   its pending requests, consents, codes and grants by `application_id`, and deleting an
 *   organization into its applications and webhooks by `organization_id`. SQLite (and PostgreSQL)
 *   find a parent's child rows only through an index on the child column; without one, each such
 *   deletion scanned the whole child table (every code and grant ever kept) under the write lock.
 * - `oauth_grants.ends_at`: the moment after which nothing issued from the grant can be live (its
 *   access tokens, its refresh family), indexed, so the retention purge can delete ended grants
 *   by one range (storage/retention-rules.ts). The service keeps it at or after the true end:
 *   set at the code exchange, moved forward when a rotation outlives it, brought back to the
 *   revocation time when the grant is revoked (storage/grants.ts, with its sqlite/ and postgres/
 *   versions).
 *   Existing grants get it from what they hold: the latest expiry of their refresh tokens, or
 *   their creation plus the access-token lifetime (3600 s, fixed here as it was when this ran).
 */
import type { Knex } from "knex";
import type { Migration } from "../../../../server/storage/db.ts";
import { isPostgres } from "../../../../server/storage/dialect.ts";

const FOREIGN_KEY_INDEXES: Array<[table: string, column: string]> = [
  ["oauth_requests", "application_id"],
  ["oauth_consents", "application_id"],
  ["oauth_codes", "application_id"],
  ["oauth_grants", "application_id"],
  ["applications", "organization_id"],
  ["webhooks", "organization_id"],
];

export const cascadesAndGrantEnds: Migration = {
  async up(db: Knex) {
    for (const [table, column] of FOREIGN_KEY_INDEXES) await db.schema.alterTable(table, (t) => t.index([column], `${table}_by_${column}`));
    await db.schema.alterTable("oauth_grants", (t) => t.string("ends_at"));
    const accessEnd = isPostgres(db)
      ? `to_char((created_at::timestamptz + interval '3600 seconds') AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`
      : `strftime('%Y-%m-%dT%H:%M:%fZ', created_at, '+3600 seconds')`;
    const latest = isPostgres(db) ? "GREATEST" : "max";
    const ended = isPostgres(db) ? "LEAST" : "min";
    const end = `${latest}(${accessEnd}, COALESCE((SELECT max(r.expires_at) FROM oauth_refresh_tokens r WHERE r.grant_id = oauth_grants.id), ''))`;
    await db.raw(`UPDATE oauth_grants SET ends_at = CASE WHEN revoked_at IS NULL THEN ${end} ELSE ${ended}(revoked_at, ${end}) END`);
    await db.schema.alterTable("oauth_grants", (t) => t.index(["ends_at"], "oauth_grants_by_ends_at"));
  },
  async down() {
    throw new Error("0009_cascades_and_grant_ends cannot be undone: restore a backup instead");
  },
};
