// @ts-check
// The checkpointing thread of server/storage/sqlite-checkpointer.ts: on a connection of its own,
// a PASSIVE WAL checkpoint every `intervalMs` (it never waits for readers or writers), each taken
// outside the main thread's bulk transactions (the lock word `gate`, sqlite-checkpointer.ts). Plain
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
/** @type {{ filename: string, intervalMs: number, gate: SharedArrayBuffer, patienceMs: number }} */
const { filename, intervalMs, gate: gateBuffer, patienceMs } = workerData;
// The lock word's values, as in sqlite-checkpointer.ts.
const FREE = 0;
const CHECKPOINT = 2;
const gate = new Int32Array(gateBuffer);

const db = new Database(filename, { fileMustExist: true });
db.pragma("busy_timeout = 0");
// Set on every connection, this one too (sqlite-settings.ts): a connection opening a WAL file
// starts at NORMAL. The parent refuses to start unless the value read back here is FULL.
db.pragma("synchronous = FULL");
port.postMessage({ synchronous: db.pragma("synchronous", { simple: true }) });

/**
 * Takes the lock, waiting (this thread may block) while a bulk transaction holds it: one batch,
 * milliseconds. After `patienceMs` it checkpoints anyway (false: the lock is not held).
 */
function takeGate() {
  const deadline = performance.now() + patienceMs;
  for (;;) {
    const seen = Atomics.compareExchange(gate, 0, FREE, CHECKPOINT);
    if (seen === FREE) return true;
    const left = deadline - performance.now();
    if (left <= 0) return false;
    Atomics.wait(gate, 0, seen, left);
  }
}

const timer = setInterval(() => {
  const held = takeGate();
  try {
    db.pragma("wal_checkpoint(PASSIVE)");
  } catch {
    // Busy or locked: the next tick tries again, and the service's own autocheckpoint is the backstop.
  } finally {
    if (held) {
      Atomics.store(gate, 0, FREE);
      Atomics.notify(gate, 0);
    }
  }
}, intervalMs);

port.once("message", () => {
  clearInterval(timer);
  db.close();
  port.close();
});
