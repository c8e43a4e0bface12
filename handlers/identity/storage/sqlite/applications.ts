/** The applications store on SQLite: client authentication's read as a statement prepared once. */
import type { Knex } from "knex";
import { withPrepared } from "../../../../server/storage/sqlite/statements.ts";
import { type ApplicationStore, clientOf, clientSql, knexApplications } from "../applications.ts";

const STATEMENTS = { client: clientSql("?", "?") };

export function sqliteApplications(db: Knex): ApplicationStore {
  const run = withPrepared(db, STATEMENTS);
  return {
    ...knexApplications(db),
    findClient: (clientId, now) => run((s) => clientOf(s.client.all(now, clientId))),
  };
}
