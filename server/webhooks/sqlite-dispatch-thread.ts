/**
 * The dispatcher's SQLite writes on a thread of their own. On one event loop, a claim's and a record
 * batch's COMMIT (an fsync: synchronous=FULL) blocked the sends for 0.2 to several milliseconds
 * each, and their statements took a quarter of the loop (bench/README.md, "Webhook deliveries").
 * Here they run on a worker thread with its own connection to the same file (WAL: the service's
 * connection keeps reading; writers take turns on the file's lock, each waiting up to
 * busy_timeout), so the event loop only sends and receives. The statements and their rules are
 * the same (storage/sqlite/dispatch.js), and so is durability: a record's promise settles after its COMMIT.
 */
import { Worker } from "node:worker_threads";
import type { AttemptWrite } from "./storage/deliveries.ts";
import type { ClaimedRow } from "./storage/schema.ts";

export interface DispatchThread {
  claimDue(now: string, leaseExpiresAt: string, leaseToken: string, limit: number): Promise<ClaimedRow[]>;
  recordAttempts(writes: AttemptWrite[], at: string): Promise<void>;
  /** Closes the thread's connection (waits for what was sent to it). */
  stop(): Promise<void>;
}

/** Starts the thread on `filename` with the service's `PRAGMA`s; `checkSynchronous` throws unless the value read back is FULL. */
export function startDispatchThread(filename: string, pragmas: string[], checkSynchronous: (value: unknown) => void): DispatchThread {
  const worker = new Worker(new URL("./sqlite-dispatch-worker.js", import.meta.url), { workerData: { filename, pragmas } });
  const calls = new Map<number, { resolve(v: unknown): void; reject(err: unknown): void }>();
  let nextId = 0;
  let failure: Error | undefined;
  const fail = (err: Error) => {
    failure ??= err;
    for (const call of calls.values()) call.reject(failure);
    calls.clear();
  };
  const opened = new Promise<void>((resolve, reject) => {
    worker.once("message", (m: { synchronous?: unknown; openError?: string }) => {
      try {
        if (m.openError) throw new Error(`webhook dispatch thread: ${m.openError}`);
        checkSynchronous(m.synchronous);
        resolve();
      } catch (err) {
        reject(err);
      }
    });
  });
  opened.then(
    () =>
      worker.on("message", (m: { id: number; result?: unknown; error?: { message: string; code?: string } | string }) => {
        const call = calls.get(m.id);
        calls.delete(m.id);
        if (!calls.size) worker.unref();
        if (!call) return;
        if (m.error === undefined) call.resolve(m.result);
        else
          call.reject(
            Object.assign(
              new Error(typeof m.error === "string" ? m.error : m.error.message),
              typeof m.error === "string" ? {} : { code: m.error.code },
            ),
          );
      }),
    (err: Error) => fail(err),
  );
  worker.on("error", (err) => fail(err));
  const exited = new Promise<void>((resolve) =>
    worker.once("exit", () => {
      fail(new Error("webhook dispatch thread exited"));
      resolve();
    }),
  );
  // Idle, it keeps no process alive; a call in flight does (its answer is awaited).
  worker.unref();

  async function call<T>(op: "claimDue" | "recordAttempts", args: unknown[]): Promise<T> {
    await opened;
    if (failure) throw failure;
    return new Promise<T>((resolve, reject) => {
      const id = nextId++;
      calls.set(id, { resolve: resolve as (v: unknown) => void, reject });
      if (calls.size === 1) worker.ref();
      worker.postMessage({ id, op, args });
    });
  }

  return {
    claimDue: (now, leaseExpiresAt, leaseToken, limit) => call<ClaimedRow[]>("claimDue", [now, leaseExpiresAt, leaseToken, limit]),
    recordAttempts: (writes, at) => call<void>("recordAttempts", [writes, at]),
    async stop() {
      // Messages are handled in order: what was sent before "stop" is done before the connection closes.
      worker.postMessage({ id: -1, op: "stop", args: [] });
      await exited;
    },
  };
}
