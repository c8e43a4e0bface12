// The checkpointing thread of server/storage/sqlite-checkpointer.ts: on a connection of its own,
// a PASSIVE WAL checkpoint every `intervalMs` (it never waits for readers or writers). Plain
// JavaScript, so it loads the same under `node --import tsx` and under vitest.
import { parentPort, workerData } from "node:worker_threads";
import Database from "better-sqlite3";

const db = new Database(workerData.filename, { fileMustExist: true });
db.pragma("busy_timeout = 0");
// Set on every connection, this one too (sqlite-settings.ts): a connection opening a WAL file
// starts at NORMAL. The parent refuses to start unless the value read back here is FULL.
db.pragma("synchronous = FULL");
parentPort.postMessage({ synchronous: db.pragma("synchronous", { simple: true }) });

const timer = setInterval(() => {
  try {
    db.pragma("wal_checkpoint(PASSIVE)");
  } catch {
    // Busy or locked: the next tick tries again, and the service's own autocheckpoint is the backstop.
  }
}, workerData.intervalMs);

parentPort.once("message", () => {
  clearInterval(timer);
  db.close();
  parentPort.close();
});
