/**
 * WAL checkpoints off the event loop. SQLite copies the write-ahead log back into the database
 * file when it has grown past `wal_autocheckpoint` pages, inside the COMMIT that crossed the mark:
 * with better-sqlite3 that is the event loop, blocked for the copy and its fsyncs (the p99 outliers
 * of the token endpoint's refresh grant, whose rows carry the sealed grace-window answer). A worker
 * thread checkpoints every quarter second instead, so the log is reset before it reaches the mark;
 * the mark stays, raised, as the backstop if the worker falls behind. Durability is unchanged: a
 * checkpoint only moves committed pages.
 *
 * Bulk writers that commit back to back (the retention purge's batches) run `outsideCheckpoints`:
 * a checkpoint and such a batch never run at the same time (a lock word both threads share). A
 * checkpoint writes hundreds of pages into the database file and fsyncs it; a COMMIT whose fsync
 * of the log lands in the middle of that waits for the disk, several times its usual time (at 10⁶
 * rows 6 % of the purge's batches overlapped one and made its whole p99). And while the batches
 * kept committing during the checkpoints, the log was never wholly copied when the next batch
 * began, so SQLite could not start it over: it grew to the backstop, whose checkpoint then ran in
 * a batch's COMMIT on the event loop. Requests never wait for a checkpoint: only those writers do.
 */
import { Worker } from "node:worker_threads";

const INTERVAL_MS = 250;
/** Pages (4 KiB each) after which a COMMIT checkpoints itself, if the worker has not. */
export const BACKSTOP_AUTOCHECKPOINT_PAGES = 10_000;

/** The shared lock word's values: nobody, a bulk writer on the event loop, the checkpointing thread. */
export const GATE_FREE = 0;
export const GATE_WRITER = 1;
export const GATE_CHECKPOINT = 2;
/**
 * How long either side waits for the other before going ahead anyway (the lock only spreads the
 * disk's work; nothing depends on it for correctness): far above a checkpoint's or a batch's time.
 */
export const GATE_PATIENCE_MS = 1000;

export interface Checkpointer {
  /** The worker connection's `PRAGMA synchronous`, read back once it is open (rejects if it could not open). */
  synchronous: Promise<number>;
  /** Runs `work` (one bulk transaction) while no checkpoint runs: waits for a running one to end, and holds the next back. */
  outsideCheckpoints<T>(work: () => Promise<T>): Promise<T>;
  stop(): Promise<void>;
}

export function startCheckpointer(filename: string): Checkpointer {
  const gate = new Int32Array(new SharedArrayBuffer(4));
  const worker = new Worker(new URL("./sqlite-checkpoint-worker.js", import.meta.url), {
    workerData: { filename, intervalMs: INTERVAL_MS, gate: gate.buffer, patienceMs: GATE_PATIENCE_MS },
  });
  // It must never keep a process alive on its own, nor take it down: the backstop covers a dead worker.
  worker.unref();
  const exited = new Promise<void>((resolve) => worker.once("exit", () => resolve()));
  // A worker that died holding the lock gives it back.
  void exited.then(() => {
    Atomics.compareExchange(gate, 0, GATE_CHECKPOINT, GATE_FREE);
    Atomics.notify(gate, 0);
  });
  const synchronous = new Promise<number>((resolve, reject) => {
    worker.once("message", (m: { synchronous: number }) => resolve(m.synchronous));
    worker.once("error", reject);
    void exited.then(() => reject(new Error("SQLite checkpointer exited before opening the database")));
  });
  worker.on("error", () => {});
  synchronous.catch(() => {});
  return {
    synchronous,
    async outsideCheckpoints(work) {
      const held = await takeGate(gate);
      try {
        return await work();
      } finally {
        if (held) {
          Atomics.store(gate, 0, GATE_FREE);
          Atomics.notify(gate, 0);
        }
      }
    },
    async stop() {
      worker.postMessage("stop");
      await exited;
    },
  };
}

/** `Atomics.waitAsync` (ES2024, in Node since 16), typed here: the project's `lib` is ES2023. */
const waitAsync = (
  Atomics as unknown as {
    waitAsync(a: Int32Array, index: number, value: number, timeoutMs: number): { async: boolean; value: Promise<string> | string };
  }
).waitAsync;

/** Takes the lock for the event loop's writer without blocking the loop; false if it waited GATE_PATIENCE_MS in vain. */
async function takeGate(gate: Int32Array): Promise<boolean> {
  const deadline = performance.now() + GATE_PATIENCE_MS;
  for (;;) {
    const seen = Atomics.compareExchange(gate, 0, GATE_FREE, GATE_WRITER);
    if (seen === GATE_FREE) return true;
    const left = deadline - performance.now();
    if (left <= 0) return false;
    // Held by the checkpoint (or by another bulk writer of this thread): until it is given back.
    const wait = waitAsync(gate, 0, seen, left);
    if (wait.async) await wait.value;
  }
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
