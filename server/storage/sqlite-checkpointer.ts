/**
 * WAL checkpoints off the event loop. SQLite copies the write-ahead log back into the database
 * file when it has grown past `wal_autocheckpoint` pages, inside the COMMIT that crossed the mark:
 * with better-sqlite3 that is the event loop, blocked for the copy and its fsyncs (the p99 outliers
 * of the token endpoint's refresh grant, whose rows carry the sealed grace-window answer). A worker
 * thread checkpoints every quarter second instead, so the log is reset before it reaches the mark;
 * the mark stays, raised, as the backstop if the worker falls behind. Durability is unchanged: a
 * checkpoint only moves committed pages.
 */
import { Worker } from "node:worker_threads";

const INTERVAL_MS = 250;
/** Pages (4 KiB each) after which a COMMIT checkpoints itself, if the worker has not. */
export const BACKSTOP_AUTOCHECKPOINT_PAGES = 10_000;

export interface Checkpointer {
  /** The worker connection's `PRAGMA synchronous`, read back once it is open (rejects if it could not open). */
  synchronous: Promise<number>;
  stop(): Promise<void>;
}

export function startCheckpointer(filename: string): Checkpointer {
  const worker = new Worker(new URL("./sqlite-checkpoint-worker.js", import.meta.url), {
    workerData: { filename, intervalMs: INTERVAL_MS },
  });
  // It must never keep a process alive on its own, nor take it down: the backstop covers a dead worker.
  worker.unref();
  const exited = new Promise<void>((resolve) => worker.once("exit", () => resolve()));
  const synchronous = new Promise<number>((resolve, reject) => {
    worker.once("message", (m: { synchronous: number }) => resolve(m.synchronous));
    worker.once("error", reject);
    void exited.then(() => reject(new Error("SQLite checkpointer exited before opening the database")));
  });
  worker.on("error", () => {});
  synchronous.catch(() => {});
  return {
    synchronous,
    async stop() {
      worker.postMessage("stop");
      await exited;
    },
  };
}
