// @ts-check
// The dispatch thread of sqlite-dispatch-thread.ts: the dispatcher's claims and attempt records on a
// connection of its own, so that their statements and above all their COMMIT's fsync (0.2 to several
// ms, during which better-sqlite3 blocks its thread) never stop the event loop that sends.
import { createRequire } from "node:module";
import { parentPort, workerData } from "node:worker_threads";
import { sqliteDispatch } from "./storage/sqlite/dispatch.js";

/** @typedef {import("./storage/sqlite/dispatch.js").Connection & { pragma(sql: string, options?: { simple: boolean }): unknown, close(): void }} Connection */
/** @type {new (filename: string, options: { fileMustExist: boolean }) => Connection} */
const Database = createRequire(import.meta.url)("better-sqlite3");

if (!parentPort) throw new Error("sqlite-dispatch-worker.js runs as a worker thread of server/webhooks/sqlite-dispatch-thread.ts");
const port = parentPort;
/** @type {{ filename: string, pragmas: string[] }} */
const { filename, pragmas } = workerData;

/** @type {Connection | undefined} */
let db;
try {
  db = new Database(filename, { fileMustExist: true });
  // The service's own settings (sqlite-settings.ts); the parent refuses to use a connection that
  // does not read back synchronous=FULL.
  for (const pragma of pragmas) db.pragma(pragma);
  port.postMessage({ synchronous: db.pragma("synchronous", { simple: true }) });
} catch (err) {
  port.postMessage({ openError: String(err) });
}
const dispatch = db ? sqliteDispatch(db) : undefined;

port.on(
  "message",
  /** @param {{ id: number, op: "claimDue" | "recordAttempts" | "stop", args: unknown[] }} m */
  (m) => {
    if (m.op === "stop") {
      db?.close();
      port.close();
      return;
    }
    try {
      if (!dispatch) throw new Error("the dispatch thread's database did not open");
      // @ts-expect-error the arguments come as the parent sent them (sqlite-dispatch-thread.ts)
      port.postMessage({ id: m.id, result: dispatch[m.op](...m.args) });
    } catch (err) {
      port.postMessage({
        id: m.id,
        error: err instanceof Error ? { message: err.message, code: /** @type {{ code?: string }} */ (err).code } : String(err),
      });
    }
  },
);
