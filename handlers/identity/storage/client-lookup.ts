/**
 * Client authentication's one read (the token endpoint's hot path): the application by client id
 * and the hashes of its secrets still accepted at `now`. On SQLite one prepared statement; on
 * PostgreSQL the two core queries.
 */
import type { Knex } from "knex";
import { isSqlite, withPrepared } from "../../../server/storage/sqlite-prepared.ts";
import { parseApplication, type Application, type ApplicationRow, type CoreQueries } from "./core-queries.ts";

export type ClientLookup = (clientId: string, now: string) => Promise<{ application: Application; secretHashes: string[] } | undefined>;

const SQL = {
  client:
    "SELECT a.*, (SELECT json_group_array(s.secret_hash) FROM client_secrets s " +
    "WHERE s.application_id = a.id AND (s.expires_at IS NULL OR s.expires_at > ?)) AS active_secret_hashes " +
    "FROM applications a WHERE a.client_id = ?",
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
      const row = s.client.get(now, clientId);
      if (!row) return undefined;
      const { active_secret_hashes: hashes, ...application } = row;
      return { application: parseApplication(application as unknown as ApplicationRow), secretHashes: JSON.parse(String(hashes)) as string[] };
    });
}
