/**
 * Group commit for knex transactions on SQLite: the write transactions that arrive within one turn
 * of the event loop share one transaction, and so one COMMIT and one fsync (WAL with
 * synchronous=FULL), instead of queueing one by one for SQLite's single writer. Each job runs in a
 * savepoint of its own, so a job that throws undoes its own writes only and rejects alone. Every
 * caller is answered after the COMMIT that made its writes durable, never before; if the COMMIT
 * fails, every job of the batch fails.
 *
 * A job must use only the transaction it is given: on SQLite the batch holds the one connection, so
 * a query through the root knex inside a job would wait for itself.
 *
 * PostgreSQL commits concurrent transactions in parallel (and groups their WAL flushes itself): there
 * each job is its own transaction.
 */
import type { Knex } from "knex";
import { isSqlite } from "./sqlite-prepared.ts";

export type GroupTransaction = <T>(job: (trx: Knex.Transaction) => Promise<T>) => Promise<T>;

interface Job {
  run: (trx: Knex.Transaction) => Promise<unknown>;
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
}

export function groupTransaction(db: Knex): GroupTransaction {
  if (!isSqlite(db)) return (job) => db.transaction(job);
  let queue: Job[] = [];

  async function flush(): Promise<void> {
    const jobs = queue;
    queue = [];
    const outcomes: Array<{ value: unknown } | { err: unknown }> = [];
    try {
      await db.transaction(async (trx) => {
        for (const job of jobs) {
          try {
            outcomes.push({ value: await trx.transaction((savepoint) => job.run(savepoint)) });
          } catch (err) {
            outcomes.push({ err });
          }
        }
      });
    } catch (err) {
      for (const job of jobs) job.reject(err);
      return;
    }
    outcomes.forEach((o, i) => {
      if ("value" in o) jobs[i]!.resolve(o.value);
      else jobs[i]!.reject(o.err);
    });
  }

  return <T>(run: (trx: Knex.Transaction) => Promise<T>) =>
    new Promise<T>((resolve, reject) => {
      const job: Job = { run, resolve: resolve as (value: unknown) => void, reject };
      if (queue.push(job) === 1) setImmediate(() => void flush());
    });
}
