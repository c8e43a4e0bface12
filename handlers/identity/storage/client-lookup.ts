/**
 * Client authentication's one read (the token endpoint's hot path): the application by client id
 * and the hashes of its secrets still accepted at `now`. On SQLite one prepared statement; on
 * PostgreSQL the two core queries.
 */
import type { Knex } from "knex";
import { isSqlite, withPrepared } from "../../../server/storage/sqlite-prepared.ts";
import { parseApplication, type Application, type ApplicationRow, type CoreQueries } from "./core-queries.ts";

export type ClientLookup = (clientId: string, now: string) => Promise<{ application: Application; secretHashes: string[] } | undefined>;

// One row per secret still accepted (or one row with a NULL hash for none): a LEFT JOIN on indexed
// columns, cheaper than aggregating the hashes in a subquery. `= +?`: prepared once, not
// re-prepared on every run (see sqlite-prepared.ts).
const SQL = {
  client:
    "SELECT a.*, s.secret_hash AS active_secret_hash FROM applications a " +
    "LEFT JOIN client_secrets s ON s.application_id = a.id AND (s.expires_at IS NULL OR s.expires_at > ?) " +
    "WHERE a.client_id = +?",
};

export function createClientLookup(db: Knex, core: CoreQueries): ClientLookup {
  if (!isSqlite(db)) {
    return async (clientId, now) => {
      const application = await core.findApplicationByClientId(clientId);
      if (!application) return undefined;
      const secrets = await core.activeClientSecrets(application.id, now);
      return { application, secretHashes: secrets.map((s) => s.secret_hash) };
    };
  }
  const run = withPrepared(db, SQL);
  return (clientId, now) =>
    run((s) => {
      const rows = s.client.all(now, clientId);
      if (!rows.length) return undefined;
      const { active_secret_hash: _, ...application } = rows[0]!;
      const secretHashes = rows.map((r) => r.active_secret_hash).filter((h): h is string => typeof h === "string");
      return { application: parseApplication(application as unknown as ApplicationRow), secretHashes };
    });
}
