/**
 * Retention: rows whose period is over are deleted in small batches, on a schedule, by one
 * statement per batch (`DELETE … WHERE key IN (SELECT key … LIMIT n)`, each batch's walk starting
 * where the last one ended: batchSelect), each its own short transaction. Between batches the
 * purge yields, so the write lock (SQLite's one connection, or PostgreSQL's row locks) is never
 * held for more than one batch and requests interleave with it.
 * What a batch costs is mostly its COMMIT's fsync, which on a busy disk can take far longer than
 * usual (bench:scale sees the same spikes on one-row writes); after a slow batch the purge waits
 * twice as long as the batch took, so it never holds the lock for more than a third of the time,
 * however slow the disk. On SQLite a batch never runs while the WAL checkpointer thread copies
 * the log back (sqlite-checkpointer.ts, `outsideCheckpoints`): a batch whose COMMIT overlapped
 * that copy took several times as long, and was the purge's p99.
 * Every rule's condition must be served by an index (the query-plan tests check the identity
 * service's), or each batch would scan the table. Rules are a service's own (retention-rules.ts).
 */
import { setImmediate as nextTurn, setTimeout as sleep } from "node:timers/promises";
import type { Knex } from "knex";
import type { Logger } from "pino";
import type { Clock } from "../clock.ts";
import { isPostgres } from "./dialect.ts";
import { outsideCheckpoints } from "./sqlite-checkpointer.ts";

/** One kind of row: where it lives, its key, and which rows are past their period at `now`. */
export interface PurgeRule {
  name: string;
  table: string;
  /** A single-column unique key (the primary key). */
  key: string;
  /** The condition of rows to delete, as SQL with `?` bindings, the same on SQLite and PostgreSQL. */
  expired(now: Date): { sql: string; bindings: Array<string | number> };
  /**
   * The indexed column the condition ranges over. Each batch is taken in its order, so the planner
   * walks that index from the oldest row: with a LIMIT alone PostgreSQL may choose a sequential
   * scan, which passes every row earlier batches deleted (dead until vacuumed) again each batch.
   */
  orderBy: string;
}

/**
 * The SELECT that picks one batch (exported so the query-plan tests check exactly what runs).
 * `from`: the last batch's greatest `orderBy` value. Every expired row before it went in an earlier
 * batch, so the walk starts there (inclusive: rows sharing that value may have been left past the
 * LIMIT) instead of at the oldest row. On PostgreSQL the rows earlier batches deleted stay in the
 * index until vacuumed, and a walk from the oldest row passed all of them again, every batch, so a
 * batch's walk grew with what the run had deleted (the email messages' at 20,000 rows: 4 buffers
 * for the first batch, 15 for the hundredth). A row that expires behind the walk during a run (a
 * message finishing late) waits for the next run.
 *
 * On PostgreSQL it locks the batch's rows and skips any that another transaction holds (`FOR UPDATE
 * SKIP LOCKED`): a batch never waits for a lock on the rows it deletes, so they never put it in a
 * deadlock, whatever order the table's other writers lock them in (a DELETE alone locks them in
 * its plan's order, which no other writer shares); a row skipped now goes with a later batch, or
 * with the next run once the walk is past it. What a deletion cascades into, or its triggers
 * write, can still wait.
 */
export function batchSelect(db: Knex, rule: PurgeRule, now: Date, batchRows: number, from?: string | number): Knex.QueryBuilder {
  const { sql, bindings } = rule.expired(now);
  const q = db(rule.table).select(rule.key).whereRaw(sql, bindings);
  if (from !== undefined) q.andWhere(rule.orderBy, ">=", from);
  q.orderBy(rule.orderBy).limit(batchRows);
  return isPostgres(db) ? q.forUpdate().skipLocked() : q;
}

/** Deletes the batch's rows in one statement; their `orderBy` values (knex has no RETURNING for SQLite deletes). */
async function deleteBatch(db: Knex, rule: PurgeRule, batch: Knex.QueryBuilder): Promise<Array<Record<string, string | number>>> {
  const { sql, bindings } = db(rule.table).whereIn(rule.key, batch).delete().toSQL();
  const result = (await db.raw(`${sql} RETURNING ??`, [...bindings, rule.orderBy])) as
    | Array<Record<string, string | number>>
    | { rows: Array<Record<string, string | number>> };
  return Array.isArray(result) ? result : result.rows;
}

export interface Purger {
  /**
   * Deletes everything past its period, batch by batch; the rows deleted per rule. `stopped` is
   * asked between batches: a shutdown does not wait for a long first purge (the rest waits for the
   * next run). A rule that fails does not keep the others from running; the run then throws a
   * PurgeError carrying what was deleted and what failed.
   */
  purge(now: Date, stopped?: () => boolean): Promise<Record<string, number>>;
}

/** Some rules of a run failed (the others ran). */
export class PurgeError extends AggregateError {
  constructor(
    errors: unknown[],
    readonly deleted: Record<string, number>,
  ) {
    super(errors, `retention purge: ${errors.length} rule(s) failed`);
  }
}

export interface PurgerOptions {
  batchRows: number;
  /** Least pause between batches, letting requests in (longer after a slow batch: SLOW_BATCH_PAUSE_FACTOR). */
  pauseMs?: number;
  onBatch?: (rule: string, rows: number, ms: number) => void;
  /** The clock batches are timed by, in ms (tests inject one). Default: performance.now. */
  now?: () => number;
  /** How the purge waits between batches (tests inject one). Default: a timer, or the next turn for 0. */
  wait?: (ms: number) => Promise<unknown>;
}

export function createPurger(db: Knex, rules: PurgeRule[], options: PurgerOptions): Purger {
  const now = options.now ?? (() => performance.now());
  const wait = options.wait ?? ((ms: number) => (ms > 0 ? sleep(ms) : nextTurn()));
  return {
    async purge(at, stopped = () => false) {
      const deleted: Record<string, number> = {};
      const failures: unknown[] = [];
      for (const rule of rules) {
        if (stopped()) break;
        let total = 0;
        let from: string | number | undefined;
        try {
          for (;;) {
            // Timed from when the batch may run: a wait for a checkpoint to end is not the batch's.
            let started = 0;
            const gone = await outsideCheckpoints(db, async () => {
              started = now();
              return await deleteBatch(db, rule, batchSelect(db, rule, at, options.batchRows, from));
            });
            const ms = now() - started;
            const rows = gone.length;
            for (const row of gone) {
              const value = row[rule.orderBy]!;
              if (from === undefined || value > from) from = value;
            }
            options.onBatch?.(rule.name, rows, ms);
            total += rows;
            if (rows < options.batchRows || stopped()) break;
            // Let waiting requests have the connection between batches; after a slow one, for longer.
            await wait(options.pauseMs === undefined ? 0 : Math.max(options.pauseMs, SLOW_BATCH_PAUSE_FACTOR * ms));
          }
        } catch (err) {
          // A busy database or a deadlock with a request (PostgreSQL aborts one of the two): the
          // rule runs again next time; the other rules run now.
          failures.push(err);
        }
        deleted[rule.name] = total;
      }
      if (failures.length) throw new PurgeError(failures, deleted);
      return deleted;
    },
  };
}

export interface RetentionSchedule {
  stop(): Promise<void>;
}

/** The least pause between batches in the service (PurgerOptions.pauseMs). */
export const PURGE_PAUSE_MS = 10;
/** After a batch, the purge waits at least this many times as long as the batch took (at most a third of the time in batches). */
export const SLOW_BATCH_PAUSE_FACTOR = 2;

/** Runs the purge every `intervalMs` (first run one interval after start); a run never overlaps the next. */
export function scheduleRetention(purger: Purger, options: { intervalMs: number; clock: Clock; logger: Logger }): RetentionSchedule {
  let running: Promise<void> | undefined;
  let stopped = false;
  const run = async () => {
    try {
      const deleted = await purger.purge(options.clock.now(), () => stopped);
      if (Object.values(deleted).some((n) => n > 0)) options.logger.info({ deleted }, "retention purge");
    } catch (err) {
      // A failed run (a busy database, a lost connection) is retried at the next interval.
      const errors = err instanceof PurgeError ? err.errors : [err];
      options.logger.warn(
        { err: errors[0], failures: errors.length, ...(err instanceof PurgeError ? { deleted: err.deleted } : {}) },
        "retention purge failed",
      );
    }
  };
  const timer = setInterval(() => {
    if (stopped || running) return;
    running = run().finally(() => (running = undefined));
  }, options.intervalMs);
  timer.unref();
  return {
    async stop() {
      stopped = true;
      clearInterval(timer);
      await running;
    },
  };
}
