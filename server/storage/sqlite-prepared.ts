/**
 * Hot paths on SQLite: better-sqlite3 statements prepared once and run synchronously on knex's one
 * connection, held for the whole read or transaction so that no other query interleaves. Through
 * knex each statement costs a query build, a pool round trip and a fresh `prepare`: about ten
 * times the statement itself (measured with bench/token.ts). Only for the few queries that a
 * benchmark shows matter; everything else stays knex.
 *
 * A statement that reads more than one table writes its `column = ?` terms `column = +?`. For such
 * a term SQLite 3.54 marks the statement for re-preparation when the bound value changes its plan,
 * better-sqlite3 clears the bindings after each run, and clearing them expires a marked statement:
 * every run would parse and plan the SQL again (about 45 µs here). The unary `+` hides the
 * parameter from that planner heuristic; the term still uses its index
 * (test/sqlite-statement-reuse.test.ts). The same holds in a statement of one table with an ORDER BY
 * (the planner weighs the value against the order's index), and for a bound LIMIT in any statement:
 * write those `column = +?` and `LIMIT +?`.
 */
import type { Knex } from "knex";

/** The few better-sqlite3 calls used (knex hands out its connection object as is). */
export interface Statement {
  get(...params: unknown[]): Record<string, unknown> | undefined;
  all(...params: unknown[]): Record<string, unknown>[];
  run(...params: unknown[]): { changes: number };
}
export interface Connection {
  prepare(sql: string): Statement;
  /** better-sqlite3: a function running `fn` in a transaction (a savepoint when nested); `.immediate` takes the write lock at BEGIN. */
  transaction<A extends unknown[], R>(fn: (...args: A) => R): ((...args: A) => R) & { immediate: (...args: A) => R };
  /** Whether a transaction is open: false once an error such as SQLITE_FULL rolled all of it back. */
  readonly inTransaction: boolean;
}

export type Statements<K extends string> = Record<K, Statement>;
export type WithStatements<K extends string> = <T>(fn: (s: Statements<K>, conn: Connection) => T) => Promise<T>;

export const isSqlite = (db: Knex): boolean => db.client.config.client === "better-sqlite3";

/**
 * The statements of `sql`, prepared once per connection, for a synchronous `fn` run on the connection
 * of the handle it is given: a knex transaction's (which holds its connection, so the statements run
 * inside it, between its other queries), or the root handle's pool, held for the call.
 */
export function preparedStatements<K extends string>(
  sql: Record<K, string>,
): <T>(db: Knex | Knex.Transaction, fn: (s: Statements<K>, conn: Connection) => T) => Promise<T> {
  // Statements belong to their connection: prepared on first use, again if the pool replaces it.
  const prepared = new WeakMap<Connection, Statements<K>>();
  const statementsOf = (conn: Connection) => {
    let s = prepared.get(conn);
    if (!s) {
      s = Object.fromEntries(Object.entries<string>(sql).map(([name, text]) => [name, conn.prepare(text)])) as Statements<K>;
      prepared.set(conn, s);
    }
    return s;
  };
  return async (db, fn) => {
    // As knex refuses a query on a finished transaction: its connection is the pool's again, and a
    // statement run there would land outside it, or in whichever transaction holds the connection now.
    if ((db as Partial<Knex.Transaction>).isCompleted?.()) throw new Error("Transaction query already complete");
    // A transaction's client hands out the transaction's connection and keeps it on release.
    const conn = (await db.client.acquireConnection()) as Connection;
    try {
      return fn(statementsOf(conn), conn);
    } finally {
      await db.client.releaseConnection(conn);
    }
  };
}

/** Runs a synchronous `fn` holding the pool's connection, with `sql` prepared on it (once per connection). */
export function withPrepared<K extends string>(db: Knex, sql: Record<K, string>): WithStatements<K> {
  const run = preparedStatements(sql);
  return (fn) => run(db, fn);
}

/**
 * A statement whose text is built at run time from a few known shapes (an UPDATE of the columns a
 * patch names): prepared on first use of each text, per connection. Only for texts built from code,
 * never from input, so that the set stays small.
 */
const dynamic = new WeakMap<Connection, Map<string, Statement>>();
export function statementFor(conn: Connection, sql: string): Statement {
  let texts = dynamic.get(conn);
  if (!texts) {
    texts = new Map();
    dynamic.set(conn, texts);
  }
  let s = texts.get(sql);
  if (!s) {
    s = conn.prepare(sql);
    texts.set(sql, s);
  }
  return s;
}

interface Job<K extends string> {
  fn: (s: Statements<K>) => boolean;
  resolve: (won: boolean) => void;
  reject: (err: unknown) => void;
}

/**
 * Group commit: the write transactions that arrive within one turn of the event loop share one
 * IMMEDIATE transaction, and so one COMMIT and one fsync (0.2 ms on 11-23's VM, 1.3 ms on 11-27's, during
 * which better-sqlite3 blocks the event loop; WAL with synchronous=FULL). Each job runs inside its
 * own savepoint, so a job that returns false or throws undoes its own writes only. Every caller is
 * answered after the COMMIT that made its writes durable, never before; if the COMMIT fails, all
 * of them fail. So do they all when a job's error ended the whole transaction (SQLITE_FULL or an
 * I/O error can roll all of it back, not just the statement): the jobs after it would otherwise run
 * outside any transaction, each committed on its own, and be answered with the batch's failure.
 * Jobs run in arrival order on the one connection, so a conditional UPDATE still decides exactly
 * one winner among concurrent callers.
 */
export function groupCommit<K extends string>(withStatements: WithStatements<K>): (fn: Job<K>["fn"]) => Promise<boolean> {
  let queue: Job<K>[] = [];
  async function flush(): Promise<void> {
    const jobs = queue;
    queue = [];
    try {
      const outcomes = await withStatements((s, conn) => {
        // better-sqlite3's transaction functions keep BEGIN, COMMIT and the SAVEPOINT statements
        // prepared; called inside a transaction, one becomes a savepoint (rolled back if it throws).
        const job = conn.transaction((fn: Job<K>["fn"]) => {
          if (!fn(s)) throw LOST;
        });
        const run = (fn: Job<K>["fn"]): { won: boolean } | { err: unknown } => {
          try {
            job(fn);
            return { won: true };
          } catch (err) {
            // The whole transaction is gone: fail the batch with this error, before another job writes.
            if (!conn.inTransaction) throw err;
            return err === LOST ? { won: false } : { err };
          }
        };
        return conn.transaction(() => jobs.map((j) => run(j.fn))).immediate();
      });
      outcomes.forEach((o, i) => {
        if ("won" in o) jobs[i]!.resolve(o.won);
        else jobs[i]!.reject(o.err);
      });
    } catch (err) {
      for (const job of jobs) job.reject(err);
    }
  }
  return (fn) =>
    new Promise<boolean>((resolve, reject) => {
      if (queue.push({ fn, resolve, reject }) === 1) setImmediate(() => void flush());
    });
}

/** Thrown inside a job's savepoint to undo it when the job returns false. */
const LOST = Symbol("lost");
