/**
 * Units of work as the domain sees them. Domain modules decide what must commit together and hand
 * the transaction on to storage functions; only storage (this folder and each service's storage/)
 * builds queries, so only storage names knex. `Tx` and `Database` are what a domain module may hold
 * and pass on, never use: the layering check (scripts/check-layers.ts) keeps knex imports out of
 * every `domain/` folder.
 */
import type { Knex } from "knex";
import { isSqlite } from "./dialect.ts";
import { preparedStatements } from "./sqlite/statements.ts";

/** A service's database handle, passed to the storage factories that build its queries. */
export type Database = Knex;

/** An open transaction, passed to storage functions so their statements commit together. */
export type Tx = Knex.Transaction;

/** Runs `work` in one transaction: committed when it resolves, rolled back when it throws. */
export type Transactor = <T>(work: (tx: Tx) => Promise<T>) => Promise<T>;

/** The plain transactor of `db`: one transaction per call. */
export const transactor =
  (db: Database): Transactor =>
  (work) =>
    db.transaction(work);

// SQLite: the savepoint's statements prepared once (through knex, each is a query build and a fresh
// `prepare`); nested savepoints of one name stack, and each RELEASE or ROLLBACK TO names the innermost.
const sqliteSavepoint = preparedStatements({
  begin: "SAVEPOINT work",
  release: "RELEASE work",
  rollback: "ROLLBACK TO work",
});

/**
 * Runs `work` in a savepoint of `tx`: its writes are undone alone when it throws, and `tx` goes on.
 * On SQLite an error such as SQLITE_FULL can roll back the whole transaction, not just the
 * statement: then `work`'s error is rethrown as is, and later savepoints of `tx` refuse to start
 * (a SAVEPOINT outside a transaction would begin one of its own, which its RELEASE commits).
 * On SQLite the savepoints of one `tx` must run one at a time (await each before the next; nesting
 * inside `work` is fine): all share one name, so two siblings running at once would release or
 * roll back each other's. knex's `tx.transaction()` queued siblings; a queue here would deadlock
 * the nested ones, and no caller needs siblings at once.
 */
export async function savepoint<T>(tx: Tx, work: (tx: Tx) => Promise<T>): Promise<T> {
  if (!isSqlite(tx)) return tx.transaction(work);
  // On SQLite `work` runs on `tx` itself: the transaction holds the one connection the savepoint is on.
  await sqliteSavepoint(tx, (s, conn) => {
    if (!conn.inTransaction) throw new Error("savepoint: the transaction was rolled back (no transaction is active)");
    s.begin.run();
  });
  let value: T;
  try {
    value = await work(tx);
  } catch (err) {
    await sqliteSavepoint(tx, (s, conn) => {
      if (!conn.inTransaction) return;
      s.rollback.run();
      s.release.run();
    });
    throw err;
  }
  await sqliteSavepoint(tx, (s) => s.release.run());
  return value;
}

/**
 * Whether `err` is a unique index's refusal (PostgreSQL 23505, SQLite's constraint codes): how a
 * domain module learns that a concurrent writer took the key first, without reading driver errors.
 */
export function isUniqueViolation(err: unknown): boolean {
  const e = err as { code?: string; message?: string } | undefined;
  return (
    e?.code === "23505" ||
    e?.code === "SQLITE_CONSTRAINT_PRIMARYKEY" ||
    e?.code === "SQLITE_CONSTRAINT_UNIQUE" ||
    /UNIQUE constraint failed|duplicate key/i.test(e?.message ?? "")
  );
}
