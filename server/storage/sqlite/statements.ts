/**
 * Prepared better-sqlite3 statements, for the operations of a store's SQLite implementation
 * (`handlers/<service>/storage/sqlite/<store>.ts`): each statement is prepared once per connection
 * and run synchronously on knex's one connection, held for the whole read or transaction so that no
 * other query interleaves. Through knex each statement would cost a query build, a pool round trip
 * and a fresh `prepare` (ADR 0008; measured in bench/results/2026-11-27-email.md and
 * 2026-11-23-token-node24.md).
 *
 * The planner rule, applied here to every statement so that no author has to remember it
 * (`plannerSafe`): a value bound to a `column = ?` term, or to `LIMIT ?`, is written `+?`. SQLite
 * marks a statement for re-preparation when a bound value the planner weighs may change its plan
 * (a term of a statement reading several tables, or of one with an ORDER BY, and a bound LIMIT);
 * better-sqlite3 clears the bindings after each run, which expires a marked statement, so every run
 * would parse and plan the SQL again. The unary `+` hides the parameter from that heuristic without
 * changing the comparison (the column's affinity still applies) or the index it uses
 * (test/storage/sqlite-statement-reuse.test.ts, test/storage/planner-rule.test.ts).
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

/** A bound parameter: `?`, `?NNN`, or a named one (`@name`, `:name`, `$name`). */
const PARAMETER = String.raw`(\?\d*|[@:$][A-Za-z_][A-Za-z0-9_]*)`;
/** `= ?` (not `<= ?`, `>= ?`, `!= ?`) and `LIMIT ?`, with the parameter bare (not already `+?`). */
const WEIGHED = new RegExp(String.raw`((?<![<>!=])==?|\bLIMIT)(\s*)${PARAMETER}`, "gi");

/**
 * `sql` with the planner rule applied: every parameter of a `=` term or a LIMIT written `+?`.
 * Text inside quotes (string literals, quoted identifiers) is left as it is.
 */
export function plannerSafe(sql: string): string {
  return sql
    .split(/('(?:[^']|'')*'|"(?:[^"]|"")*")/)
    .map((part, i) =>
      i % 2 === 1 ? part : part.replace(WEIGHED, (_, operator: string, space: string, param: string) => `${operator}${space}+${param}`),
    )
    .join("");
}

/**
 * Every statement defined through `preparedStatements`/`withPrepared` in this process, as prepared
 * (the rule applied): what test/storage/planner-rule.test.ts checks against the migrated schemas.
 */
const defined = new Set<string>();
export const definedStatements = (): ReadonlySet<string> => defined;

/**
 * The statements of `sql`, prepared once per connection, for a synchronous `fn` run on the connection
 * of the handle it is given: a knex transaction's (which holds its connection, so the statements run
 * inside it, between its other queries), or the root handle's pool, held for the call.
 */
export function preparedStatements<K extends string>(
  sql: Record<K, string>,
): <T>(db: Knex | Knex.Transaction, fn: (s: Statements<K>, conn: Connection) => T) => Promise<T> {
  const texts = Object.entries<string>(sql).map(([name, text]) => [name, plannerSafe(text)] as const);
  for (const [, text] of texts) defined.add(text);
  // Statements belong to their connection: prepared on first use, again if the pool replaces it.
  const prepared = new WeakMap<Connection, Statements<K>>();
  const statementsOf = (conn: Connection) => {
    let s = prepared.get(conn);
    if (!s) {
      s = Object.fromEntries(texts.map(([name, text]) => [name, conn.prepare(text)])) as Statements<K>;
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
 * patch names): prepared on first use of each text, per connection, with the planner rule applied.
 * Only for texts built from code, never from input, so that the set stays small.
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
    s = conn.prepare(plannerSafe(sql));
    texts.set(sql, s);
  }
  return s;
}
