/**
 * Named prepared statements on PostgreSQL, for the operations of a store's PostgreSQL
 * implementation (`handlers/<service>/storage/postgres/<store>.ts`), run on a connection of knex's
 * pool with no query build. Through knex each statement costs a query build (toSQL, bindings,
 * identifier quoting) and PostgreSQL parses and plans it again; a named statement is parsed once per
 * connection (pg keeps track) and sent as Bind/Execute alone (ADR 0008). Written so that one
 * statement does what several round trips did (a join for a read, data-modifying CTEs for a
 * transaction); every other operation stays in the store's knex implementation.
 *
 * The connection comes from knex's pool, so it has the service's `search_path`, and knex's own
 * transactions never see it. Named statements need a session of their own per connection: behind
 * PgBouncer, use session pooling (or transaction pooling from PgBouncer 1.21, which tracks
 * protocol-level prepared statements). Statements name their columns rather than `*`.
 */
import type { Knex } from "knex";

/** The pg client's calls used, and where it remembers which statements the connection has prepared. */
interface PgConnection {
  query(q: { name: string; text: string; values: readonly unknown[] } | string): Promise<{ rows: Record<string, unknown>[] }>;
  connection: { parsedStatements: Record<string, string> };
}

/**
 * PostgreSQL refuses to run a prepared statement whose result columns a schema change altered
 * (SQLSTATE 0A000, "cached plan must not change result type"), and pg never prepares a named
 * statement again by itself: a migration applied by another instance during a rolling deploy
 * would break this connection's statement for good. It is prepared again, once.
 */
const isStalePlan = (err: unknown) =>
  (err as { code?: string }).code === "0A000" && /cached plan must not change result type/.test(String((err as Error).message));

export type RunPrepared<K extends string> = (name: K, values: readonly unknown[]) => Promise<Record<string, unknown>[]>;

export interface PgPreparedOptions<K extends string> {
  /**
   * Planner settings for a statement alone, by name (`"enable_sort = off"`): it then runs in a
   * transaction of its own, `BEGIN; SET LOCAL …` (one round trip), the statement, `COMMIT`. For a
   * statement whose good plan the statistics may not show (statistics of a queue table are stale
   * as soon as a backlog builds up); the settings end with the transaction, so nothing else that
   * runs on the pooled connection sees them.
   */
  local?: Partial<Record<K, string>>;
}

/**
 * `sql` by name, `$1…$n` parameters. `prefix` keeps the statement names of different modules apart
 * on a shared connection (a name stands for one text per connection).
 */
export function pgPrepared<K extends string>(
  db: Knex,
  prefix: string,
  sql: Record<K, string>,
  options: PgPreparedOptions<K> = {},
): RunPrepared<K> {
  return async (name, values) => {
    const conn = (await db.client.acquireConnection()) as PgConnection;
    const statement = { name: `${prefix}_${name}`, text: sql[name], values };
    const local = options.local?.[name];
    const run = async () => {
      if (!local) return (await conn.query(statement)).rows;
      await conn.query(`BEGIN; SET LOCAL ${local}`);
      try {
        const { rows } = await conn.query(statement);
        await conn.query("COMMIT");
        return rows;
      } catch (err) {
        await conn.query("ROLLBACK").catch(() => {});
        throw err;
      }
    };
    try {
      return await run();
    } catch (err) {
      if (!isStalePlan(err)) throw err;
      await conn.query(`DEALLOCATE ${statement.name}`);
      delete conn.connection.parsedStatements[statement.name];
      return await run();
    } finally {
      await db.client.releaseConnection(conn);
    }
  };
}
