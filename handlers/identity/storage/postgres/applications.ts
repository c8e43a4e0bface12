/** The applications store on PostgreSQL: client authentication's read as a named prepared statement. */
import type { Knex } from "knex";
import { pgPrepared } from "../../../../server/storage/postgres/statements.ts";
import { type ApplicationStore, clientOf, clientSql, knexApplications } from "../applications.ts";

const STATEMENTS = { client: clientSql("$1", "$2") };

export function postgresApplications(db: Knex): ApplicationStore {
  const run = pgPrepared(db, "client", STATEMENTS);
  return {
    ...knexApplications(db),
    findClient: async (clientId, now) => clientOf(await run("client", [now, clientId])),
  };
}
