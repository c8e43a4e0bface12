/**
 * Group commit on SQLite (ADR 0005): the write transactions that arrive within one turn of the
 * event loop share one IMMEDIATE transaction, and so one COMMIT and one fsync, during which
 * better-sqlite3 blocks the event loop (WAL with synchronous=FULL).
 */
import type { Statements, WithStatements } from "./statements.ts";

interface Job<K extends string> {
  fn: (s: Statements<K>) => boolean;
  resolve: (won: boolean) => void;
  reject: (err: unknown) => void;
}

/**
 * Each job runs inside its own savepoint, so a job that returns false or throws undoes its own
 * writes only. Every caller is answered after the COMMIT that made its writes durable, never
 * before; if the COMMIT fails, all of them fail. So do they all when a job's error ended the whole
 * transaction (SQLITE_FULL or an I/O error can roll all of it back, not just the statement): the
 * jobs after it would otherwise run outside any transaction, each committed on its own, and be
 * answered with the batch's failure. Jobs run in arrival order on the one connection, so a
 * conditional UPDATE still decides exactly one winner among concurrent callers.
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
