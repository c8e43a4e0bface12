/**
 * Group commit on SQLite (ADR 0005): the write transactions that arrive within one turn of the
 * event loop share one IMMEDIATE transaction, and so one COMMIT and one fsync, during which
 * better-sqlite3 blocks the event loop (WAL with synchronous=FULL).
 */
import { createBatcher, type ItemOutcome, itemDone, itemFailed } from "../../background/batcher.ts";
import type { Statements, WithStatements } from "./statements.ts";

/** A write job: runs its statements and says whether it won (false undoes its own writes). */
type Job<K extends string> = (s: Statements<K>) => boolean;

/**
 * Each job runs inside its own savepoint, so a job that returns false or throws undoes its own
 * writes only. Every caller is answered after the COMMIT that made its writes durable, never
 * before; if the COMMIT fails, all of them fail. So do they all when a job's error ended the whole
 * transaction (SQLITE_FULL or an I/O error can roll all of it back, not just the statement): the
 * jobs after it would otherwise run outside any transaction, each committed on its own, and be
 * answered with the batch's failure. Jobs run in arrival order on the one connection, so a
 * conditional UPDATE still decides exactly one winner among concurrent callers. The batches are
 * server/background/batcher.ts's, flushed at the end of the turn, one at a time.
 */
export function groupCommit<K extends string>(withStatements: WithStatements<K>): (fn: Job<K>) => Promise<boolean> {
  const batcher = createBatcher<Job<K>, boolean>({
    when: "turn",
    flush: (jobs) =>
      withStatements((s, conn) => {
        // better-sqlite3's transaction functions keep BEGIN, COMMIT and the SAVEPOINT statements
        // prepared; called inside a transaction, one becomes a savepoint (rolled back if it throws).
        const job = conn.transaction((fn: Job<K>) => {
          if (!fn(s)) throw LOST;
        });
        const run = (fn: Job<K>): ItemOutcome<boolean> => {
          try {
            job(fn);
            return itemDone(true);
          } catch (err) {
            // The whole transaction is gone: fail the batch with this error, before another job writes.
            if (!conn.inTransaction) throw err;
            return err === LOST ? itemDone(false) : itemFailed(err);
          }
        };
        return conn.transaction(() => jobs.map(run)).immediate();
      }),
  });
  return (fn) => batcher.add(fn);
}

/** Thrown inside a job's savepoint to undo it when the job returns false. */
const LOST = Symbol("lost");
