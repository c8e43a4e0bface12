/**
 * The planner's answer for the statements of a storage test, one line per statement: SQLite's
 * EXPLAIN QUERY PLAN steps, PostgreSQL's EXPLAIN nodes, joined with " | ". On PostgreSQL
 * sequential scans are priced out, and bitmap scans too unless `bitmapScans` keeps them, since an
 * empty test table's statistics would pick them over the index the statement is meant to use.
 */
import type { Knex } from "knex";
import type { Database } from "../../server/storage/db.ts";
import { isPostgres } from "../../server/storage/dialect.ts";

export interface PlanOptions {
  /** PostgreSQL: leave bitmap scans priced as usual. */
  bitmapScans?: boolean;
}

/** The plan of `sql` with `bindings` (`?` placeholders). */
export async function planOf(db: Database, sql: string, bindings: readonly unknown[], options: PlanOptions = {}): Promise<string> {
  if (isPostgres(db))
    return db.transaction(async (trx) => {
      await trx.raw("SET LOCAL enable_seqscan = off");
      if (!options.bitmapScans) await trx.raw("SET LOCAL enable_bitmapscan = off");
      const rows = (await trx.raw(`EXPLAIN ${sql}`, bindings as Knex.RawBinding[])) as { rows: Array<{ "QUERY PLAN": string }> };
      return rows.rows.map((r) => r["QUERY PLAN"]).join(" | ");
    });
  const rows = (await db.raw(`EXPLAIN QUERY PLAN ${sql}`, bindings as Knex.RawBinding[])) as Array<{ detail: string }>;
  return rows.map((r) => r.detail).join(" | ");
}

/** The plans of the statements `run` sends through knex, in order. */
export async function plansOf(db: Database, run: () => Promise<unknown>, options: PlanOptions = {}): Promise<string[]> {
  const statements: Array<{ sql: string; bindings: unknown[] }> = [];
  const capture = (q: { sql: string; bindings?: unknown[] }) => statements.push({ sql: q.sql, bindings: q.bindings ?? [] });
  db.on("query", capture);
  try {
    await run();
  } finally {
    db.off("query", capture);
  }
  const plans: string[] = [];
  // knex hands PostgreSQL's statements over numbered ($1); raw() takes `?`.
  for (const { sql, bindings } of statements) plans.push(await planOf(db, sql.replace(/\$\d+/g, "?"), bindings, options));
  return plans;
}
