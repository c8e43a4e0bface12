// @ts-check
// The checkpointing thread of sqlite-checkpointer.ts: on a connection of its own, a PASSIVE WAL
// checkpoint every `intervalMs` (it never waits for readers or writers), each taken outside the main
// thread's bulk transactions (the shared lock word, server/background/shared-lock.ts). Served through
// server/background/thread-side.ts. Plain JavaScript (type-checked through JSDoc), so it loads the
// same under `node --import tsx` and under vitest.
import { createRequire } from "node:module";
import { workerData } from "node:worker_threads";
import { release, takeBlocking } from "../background/shared-lock.ts";
import { serveThread } from "../background/thread-side.ts";

/** better-sqlite3 ships no types; this is the part used here. */
/** @typedef {{ pragma(sql: string, options?: { simple: boolean }): unknown, close(): void }} Connection */
/** @type {new (filename: string, options: { fileMustExist: boolean }) => Connection} */
const Database = createRequire(import.meta.url)("better-sqlite3");

/** @type {import("./sqlite-checkpointer.ts").CheckpointWorkerData} */
const { filename, intervalMs, lock: lockBuffer, holder, patienceMs } = workerData;
const lock = new Int32Array(lockBuffer);

/** @type {Connection | undefined} */
let db;
/** @type {ReturnType<typeof setInterval> | undefined} */
let timer;

function checkpoint() {
  // After `patienceMs` it checkpoints anyway, without the lock.
  const held = takeBlocking(lock, holder, patienceMs);
  try {
    db?.pragma("wal_checkpoint(PASSIVE)");
  } catch {
    // Busy or locked: the next tick tries again, and the service's own autocheckpoint is the backstop.
  } finally {
    if (held) release(lock);
  }
}

serveThread({
  open() {
    const conn = new Database(filename, { fileMustExist: true });
    db = conn;
    conn.pragma("busy_timeout = 0");
    // Set on every connection, this one too (sqlite-settings.ts): a connection opening a WAL file
    // starts at NORMAL. The parent refuses to start unless the value read back here is FULL.
    conn.pragma("synchronous = FULL");
    timer = setInterval(checkpoint, intervalMs);
    return { synchronous: conn.pragma("synchronous", { simple: true }) };
  },
  close() {
    clearInterval(timer);
    db?.close();
  },
});
