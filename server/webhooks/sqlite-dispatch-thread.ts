/**
 * The dispatcher's SQLite writes on a thread of their own (ADR 0010). On the event loop, a claim's and
 * a record batch's COMMIT (an fsync: synchronous=FULL) would stop the sends for as long as it takes.
 * Here they run on a worker thread (sqlite-dispatch-worker.js, through
 * server/background/worker-thread.ts) with its own connection to the same file (WAL: the service's
 * connection keeps reading; writers take turns on the file's lock, each waiting up to busy_timeout),
 * so the event loop only sends and receives. The statements and their rules are the same
 * (storage/sqlite/dispatch.js), and so is durability: a record's promise settles after its COMMIT.
 */
import { startWorkerThread } from "../background/worker-thread.ts";
import type { AttemptWrite } from "./storage/deliveries.ts";
import type { ClaimedRow } from "./storage/schema.ts";

export interface DispatchThread {
  claimDue(now: string, leaseExpiresAt: string, leaseToken: string, limit: number): Promise<ClaimedRow[]>;
  recordAttempts(writes: AttemptWrite[], at: string): Promise<void>;
  /** Closes the thread's connection (waits for what was sent to it). */
  stop(): Promise<void>;
}

/** A request to the thread: one of sqliteDispatch's functions and its arguments. */
export type DispatchRequest =
  | { op: "claimDue"; args: [now: string, leaseExpiresAt: string, leaseToken: string, limit: number] }
  | { op: "recordAttempts"; args: [writes: AttemptWrite[], at: string] };

/** Starts the thread on `filename` with the service's `PRAGMA`s; `checkSynchronous` throws unless the value read back is FULL. */
export function startDispatchThread(filename: string, pragmas: string[], checkSynchronous: (value: unknown) => void): DispatchThread {
  const thread = startWorkerThread<void>({
    url: new URL("./sqlite-dispatch-worker.js", import.meta.url),
    name: "webhook dispatch thread",
    workerData: { filename, pragmas },
    start: "now",
    checkHello: (hello) => checkSynchronous((hello as { synchronous: unknown }).synchronous),
  });
  const call = <T>(request: DispatchRequest) => thread.request<T>(request);
  return {
    claimDue: (now, leaseExpiresAt, leaseToken, limit) =>
      call<ClaimedRow[]>({ op: "claimDue", args: [now, leaseExpiresAt, leaseToken, limit] }),
    recordAttempts: (writes, at) => call<void>({ op: "recordAttempts", args: [writes, at] }),
    // Requests are handled in order: what was sent before the stop is done before the connection closes.
    stop: () => thread.stop(),
  };
}
