/**
 * WAL checkpoints off the event loop. SQLite copies the write-ahead log back into the database file
 * when it has grown past `wal_autocheckpoint` pages, inside the COMMIT that crossed the mark: with
 * better-sqlite3 that is the event loop, blocked for the copy and its fsyncs. A worker thread
 * (sqlite-checkpoint-worker.js, through server/background/worker-thread.ts) checkpoints every
 * INTERVAL_MS instead, so the log is reset before it reaches the mark; the mark stays, raised, as the
 * backstop if the worker falls behind or dies. Durability is unchanged: a checkpoint only moves
 * committed pages.
 *
 * Bulk writers that commit back to back (the retention purge's batches) run `outsideCheckpoints`: a
 * checkpoint and such a batch never run at the same time (a lock word both threads share,
 * server/background/shared-lock.ts). A COMMIT whose fsync of the log lands in the middle of a
 * checkpoint's writes waits for the disk; and while batches keep committing during checkpoints, the
 * log is never wholly copied when the next batch begins, so SQLite cannot start it over and it grows
 * to the backstop. Requests never wait for a checkpoint: only those writers do. ADR 0010 has the
 * measurements behind this.
 */
import { startWorkerThread } from "../background/worker-thread.ts";
import { release, releaseIfHeldBy, takeWithoutBlocking } from "../background/shared-lock.ts";

const INTERVAL_MS = 250;
/** Pages (4 KiB each) after which a COMMIT checkpoints itself, if the worker has not. */
export const BACKSTOP_AUTOCHECKPOINT_PAGES = 10_000;

/** The lock word's holders: a bulk writer on the event loop, the checkpointing thread. */
const WRITER = 1;
const CHECKPOINT = 2;
/** How long either side waits for the other before going ahead anyway: far above a checkpoint's or a batch's time. */
const PATIENCE_MS = 1000;

/** What sqlite-checkpoint-worker.js is started with. */
export interface CheckpointWorkerData {
  filename: string;
  intervalMs: number;
  /** The lock word's buffer, and the number the thread holds it as. */
  lock: SharedArrayBuffer;
  holder: number;
  patienceMs: number;
}

export interface Checkpointer {
  /** The worker connection's `PRAGMA synchronous`, read back once it is open (rejects if it could not open). */
  synchronous: Promise<number>;
  /** Runs `work` (one bulk transaction) while no checkpoint runs: waits for a running one to end, and holds the next back. */
  outsideCheckpoints<T>(work: () => Promise<T>): Promise<T>;
  stop(): Promise<void>;
}

export function startCheckpointer(filename: string): Checkpointer {
  const lock = new Int32Array(new SharedArrayBuffer(4));
  const thread = startWorkerThread<number>({
    url: new URL("./sqlite-checkpoint-worker.js", import.meta.url),
    name: "the SQLite checkpointer",
    workerData: {
      filename,
      intervalMs: INTERVAL_MS,
      lock: lock.buffer as SharedArrayBuffer,
      holder: CHECKPOINT,
      patienceMs: PATIENCE_MS,
    } satisfies CheckpointWorkerData,
    start: "now",
    checkHello: (hello) => (hello as { synchronous: number }).synchronous,
    // A worker that died holding the lock gives it back. It never takes the process down: the backstop covers a dead worker.
    onExit: () => releaseIfHeldBy(lock, CHECKPOINT),
  });
  return {
    synchronous: thread.ready.then((value) => value!),
    async outsideCheckpoints(work) {
      const held = await takeWithoutBlocking(lock, WRITER, PATIENCE_MS);
      try {
        return await work();
      } finally {
        if (held) release(lock);
      }
    },
    stop: () => thread.stop(),
  };
}

/** Which checkpointer runs beside a database handle (db.ts registers it). */
const checkpointers = new WeakMap<object, Checkpointer>();

export function registerCheckpointer(db: object, checkpointer: Checkpointer): void {
  checkpointers.set(db, checkpointer);
}

/**
 * Runs one transaction of a bulk writer on `db` outside the WAL checkpoints of its checkpointer
 * (see the module comment); on a database without one (PostgreSQL) it just runs it.
 */
export function outsideCheckpoints<T>(db: object, work: () => Promise<T>): Promise<T> {
  const checkpointer = checkpointers.get(db);
  return checkpointer ? checkpointer.outsideCheckpoints(work) : work();
}
