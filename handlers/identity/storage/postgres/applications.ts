/**
 * The applications store on PostgreSQL: client authentication's read as a named prepared
 * statement, batched: the token requests of one turn share one statement (batched-reads.ts).
 */
import type { Knex } from "knex";
import { batchedSql, pgBatchedRead } from "../../../../server/storage/postgres/batched-reads.ts";
import { pgPrepared } from "../../../../server/storage/postgres/statements.ts";
import { type ApplicationStore, clientOf, clientSql, knexApplications } from "../applications.ts";

const STATEMENTS = { client: batchedSql(["now", "client_id"], (p) => clientSql(p("now"), p("client_id"))) };

export function postgresApplications(db: Knex): ApplicationStore {
  const client = pgBatchedRead(pgPrepared(db, "client", STATEMENTS), "client");
  return {
    ...knexApplications(db),
    findClient: async (clientId, now) => clientOf(await client([now, clientId])),
  };
}
