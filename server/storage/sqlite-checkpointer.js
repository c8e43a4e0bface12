// The checkpointing thread of server/storage/sqlite-checkpointer.ts: on a connection of its own,
// a PASSIVE WAL checkpoint every `intervalMs` (it never waits for readers or writers). Plain
// JavaScript, so it loads the same under `node --import tsx` and under vitest.
import { parentPort, workerData } from "node:worker_threads";
import Database from "better-sqlite3";

const db = new Database(workerData.filename, { fileMustExist: true });
db.pragma("busy_timeout = 0");

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
