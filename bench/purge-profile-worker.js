// @ts-check
// bench/purge-profile.ts's checkpointer: the service's (server/storage/sqlite-checkpoint-worker.js),
// a PASSIVE checkpoint every `intervalMs` on a connection of its own, that also records when each
// checkpoint ran and what it copied, in wall-clock ms (performance.timeOrigin + now, so the
// main thread's timestamps compare).
import { createRequire } from "node:module";
import { parentPort, workerData } from "node:worker_threads";

/** @typedef {{ pragma(sql: string, options?: { simple: boolean }): unknown, close(): void }} Connection */
/** @type {new (filename: string, options: { fileMustExist: boolean }) => Connection} */
const Database = createRequire(import.meta.url)("better-sqlite3");

if (!parentPort) throw new Error("a worker thread");
const port = parentPort;
/** @type {{ filename: string, intervalMs: number, gate?: SharedArrayBuffer }} */
const { filename, intervalMs, gate } = workerData;
const lock = gate ? new Int32Array(gate) : undefined;

const db = new Database(filename, { fileMustExist: true });
db.pragma("busy_timeout = 0");
db.pragma("synchronous = FULL");
port.postMessage({ synchronous: db.pragma("synchronous", { simple: true }) });

const at = () => performance.timeOrigin + performance.now();
/** @type {Array<[number, number, number, number, number]>} start, end, busy, log frames, checkpointed frames */
const trace = [];
const timer = setInterval(() => {
  let held = false;
  if (lock) {
    for (let i = 0; i < 20 && !held; i++) {
      held = Atomics.compareExchange(lock, 0, 0, 2) === 0;
      if (!held) Atomics.wait(lock, 0, 1, 50);
    }
  }
  const start = at();
  try {
    const [r] = /** @type {Array<{ busy: number, log: number, checkpointed: number }>} */ (db.pragma("wal_checkpoint(PASSIVE)"));
    trace.push([start, at(), r?.busy ?? -1, r?.log ?? -1, r?.checkpointed ?? -1]);
  } catch {
    trace.push([start, at(), -2, -1, -1]);
  }
  if (lock && held) {
    Atomics.store(lock, 0, 0);
    Atomics.notify(lock, 0);
  }
}, intervalMs);

port.on("message", (m) => {
  if (m === "trace") {
    port.postMessage({ trace: trace.splice(0) });
    return;
  }
  clearInterval(timer);
  db.close();
  port.close();
});
