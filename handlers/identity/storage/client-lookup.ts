/**
 * Client authentication's one read (the token endpoint's hot path): the application by client id
 * and the hashes of its secrets still accepted at `now`: one prepared statement on either database
 * (server/storage/sqlite-prepared.ts, server/storage/pg-prepared.ts).
 */
import type { Knex } from "knex";
import { isSqlite } from "../../../server/storage/dialect.ts";
import { pgPrepared } from "../../../server/storage/postgres/statements.ts";
import { withPrepared } from "../../../server/storage/sqlite/statements.ts";
import { parseApplication, type Application, type ApplicationRow } from "./core-queries.ts";

export type ClientLookup = (clientId: string, now: string) => Promise<{ application: Application; secretHashes: string[] } | undefined>;

/** The columns read (never `a.*`: a prepared `*` breaks on PostgreSQL when a migration adds a column under a running instance). */
const APPLICATION_COLUMNS: ReadonlyArray<keyof ApplicationRow> = [
  "id",
  "organization_id",
  "name",
  "client_id",
  "client_type",
  "redirect_uris",
  "allowed_scopes",
  "enabled_providers",
  "branding",
  "first_party",
  "created_at",
  "updated_at",
  "enabled",
  "tokens_not_before",
  "allowed_origins",
];

// One row per secret still accepted (or one row with a NULL hash for none): a LEFT JOIN on indexed
// columns, cheaper than aggregating the hashes in a subquery. `= +?`: prepared once, not
// re-prepared on every run (see sqlite-prepared.ts).
const SQL = {
  client:
    `SELECT ${APPLICATION_COLUMNS.map((c) => `a.${c}`).join(", ")}, s.secret_hash AS active_secret_hash FROM applications a ` +
    "LEFT JOIN client_secrets s ON s.application_id = a.id AND (s.expires_at IS NULL OR s.expires_at > ?) " +
    "WHERE a.client_id = +?",
};

/** The application and its accepted secrets' hashes out of the statement's rows. */
function fromRows(rows: Record<string, unknown>[]): { application: Application; secretHashes: string[] } | undefined {
  if (!rows.length) return undefined;
  const { active_secret_hash: _, ...application } = rows[0]!;
  const secretHashes = rows.map((r) => r.active_secret_hash).filter((h): h is string => typeof h === "string");
  return { application: parseApplication(application as unknown as ApplicationRow), secretHashes };
}

export function createClientLookup(db: Knex): ClientLookup {
  if (!isSqlite(db)) {
    const run = pgPrepared(db, "client", { client: SQL.client.replace("> ?", "> $1").replace("= +?", "= $2") });
    return async (clientId, now) => fromRows(await run("client", [now, clientId]));
  }
  const run = withPrepared(db, SQL);
  return (clientId, now) => run((s) => fromRows(s.client.all(now, clientId)));
}
