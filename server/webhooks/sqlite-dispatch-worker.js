// @ts-check
// The dispatch thread of sqlite-dispatch-thread.ts: the dispatcher's claims and attempt records on a
// connection of its own, so that their statements and above all their COMMIT's fsync (during which
// better-sqlite3 blocks its thread) never stop the event loop that sends. Served through
// server/background/thread-side.ts.
import { createRequire } from "node:module";
import { workerData } from "node:worker_threads";
import { serveThread } from "../background/thread-side.ts";
import { sqliteDispatch } from "./storage/sqlite/dispatch.js";

/** @typedef {import("./storage/sqlite/dispatch.js").Connection & { pragma(sql: string, options?: { simple: boolean }): unknown, close(): void }} Connection */
/** @type {new (filename: string, options: { fileMustExist: boolean }) => Connection} */
const Database = createRequire(import.meta.url)("better-sqlite3");

/** @type {{ filename: string, pragmas: string[] }} */
const { filename, pragmas } = workerData;

/** @type {Connection | undefined} */
let db;
/** @type {ReturnType<typeof sqliteDispatch> | undefined} */
let dispatch;

serveThread({
  open() {
    const conn = new Database(filename, { fileMustExist: true });
    db = conn;
    // The service's own settings (sqlite-settings.ts); the parent refuses to use a connection that
    // does not read back synchronous=FULL.
    for (const pragma of pragmas) conn.pragma(pragma);
    dispatch = sqliteDispatch(conn);
    return { synchronous: conn.pragma("synchronous", { simple: true }) };
  },
  /** @param {import("./sqlite-dispatch-thread.ts").DispatchRequest} request */
  handle(request) {
    if (!dispatch) throw new Error("the dispatch thread's database did not open");
    if (request.op === "claimDue") return dispatch.claimDue(...request.args);
    return dispatch.recordAttempts(...request.args);
  },
  close() {
    db?.close();
  },
});
