// @ts-check
// The checkpointing thread of server/storage/sqlite-checkpointer.ts: on a connection of its own,
// a PASSIVE WAL checkpoint every `intervalMs` (it never waits for readers or writers). Plain
// JavaScript (type-checked through JSDoc), so it loads the same under `node --import tsx` and
// under vitest.
import { createRequire } from "node:module";
import { parentPort, workerData } from "node:worker_threads";

/** better-sqlite3 ships no types; this is the part used here. */
/** @typedef {{ pragma(sql: string, options?: { simple: boolean }): unknown, close(): void }} Connection */
/** @type {new (filename: string, options: { fileMustExist: boolean }) => Connection} */
const Database = createRequire(import.meta.url)("better-sqlite3");

if (!parentPort) throw new Error("sqlite-checkpoint-worker.js runs as a worker thread of server/storage/sqlite-checkpointer.ts");
const port = parentPort;
/** @type {{ filename: string, intervalMs: number }} */
const { filename, intervalMs } = workerData;

const db = new Database(filename, { fileMustExist: true });
db.pragma("busy_timeout = 0");
// Set on every connection, this one too (sqlite-settings.ts): a connection opening a WAL file
// starts at NORMAL. The parent refuses to start unless the value read back here is FULL.
db.pragma("synchronous = FULL");
port.postMessage({ synchronous: db.pragma("synchronous", { simple: true }) });

const timer = setInterval(() => {
  try {
    db.pragma("wal_checkpoint(PASSIVE)");
  } catch {
    // Busy or locked: the next tick tries again, and the service's own autocheckpoint is the backstop.
  }
}, intervalMs);

port.once("message", () => {
  clearInterval(timer);
  db.close();
  port.close();
});
