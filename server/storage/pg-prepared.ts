/**
 * Hot paths on PostgreSQL: named prepared statements run on a connection of knex's pool, with no
 * query build. Through knex each statement costs a query build (toSQL, bindings, identifier
 * quoting) and PostgreSQL parses and plans it again; a named statement is parsed once per
 * connection (pg keeps track) and sent as Bind/Execute alone. Only for the few queries that a
 * benchmark shows matter, written so that one statement does what several round trips did
 * (a join for a read, data-modifying CTEs for a transaction); everything else stays knex.
 *
 * The connection comes from knex's pool, so it has the service's `search_path`, and knex's own
 * transactions never see it.
 */
import type { Knex } from "knex";

/** The pg client's one call used. */
interface PgConnection {
  query(q: {
    name: string;
    text: string;
    values: readonly unknown[];
  }): Promise<{ rows: Record<string, unknown>[]; rowCount: number | null }>;
}

export type RunPrepared<K extends string> = (name: K, values: readonly unknown[]) => Promise<Record<string, unknown>[]>;

/**
 * `sql` by name, `$1…$n` parameters. `prefix` keeps the statement names of different modules apart
 * on a shared connection (a name stands for one text per connection).
 */
export function pgPrepared<K extends string>(db: Knex, prefix: string, sql: Record<K, string>): RunPrepared<K> {
  return async (name, values) => {
    const conn = (await db.client.acquireConnection()) as PgConnection;
    try {
      return (await conn.query({ name: `${prefix}_${name}`, text: sql[name], values })).rows;
    } finally {
      await db.client.releaseConnection(conn);
    }
  };
}
