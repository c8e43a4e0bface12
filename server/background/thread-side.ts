/**
 * The worker thread's half of worker-thread.ts: what a worker module (`*-worker.js`) calls to serve
 * its parent. Erasable TypeScript with no imports of the project's, so Node loads it in a worker as
 * it is, under `node --import tsx` and under vitest alike.
 *
 * The protocol, both halves:
 * - parent → thread: `{ request: id, body }`, then `{ stop: true }` once;
 * - thread → parent: first `{ ready: hello }` or `{ openFailed: message }` (only a thread that
 *   opens something, such as a database), then one `{ answer: id, result }` or
 *   `{ answer: id, error: { message, code } }` per request.
 * Requests are handled in the order they came; `stop` is handled after every request sent before it
 * has been answered, then the thread closes what it opened and exits.
 */
import { parentPort } from "node:worker_threads";

export type ToThread = { request: number; body: unknown } | { stop: true };
export type FromThread =
  | { ready: unknown }
  | { openFailed: string }
  | { answer: number; result: unknown }
  | { answer: number; error: { message: string; code?: string | undefined } };

/** An answer that moves `transfer` (ArrayBuffers of its own) to the parent instead of copying them. */
export class Transferring {
  readonly value: unknown;
  readonly transfer: ArrayBuffer[];
  constructor(value: unknown, transfer: ArrayBuffer[]) {
    this.value = value;
    this.transfer = transfer;
  }
}

export interface ThreadHandlers<Request> {
  /** Opens what the thread needs; its value is the hello the parent checks. A throw is reported as the failure to open, and the thread ends. */
  open?(): unknown;
  /** Answers one request: its value (a promise of it, or a Transferring) is the answer; a throw is this request's error. */
  handle?(body: Request): unknown;
  /** Closes what the thread opened, when the parent stops it. */
  close?(): void;
}

/** Serves the parent of this worker thread with `handlers` (see the module comment). */
export function serveThread<Request>(handlers: ThreadHandlers<Request>): void {
  if (!parentPort) throw new Error("this module runs as a worker thread (server/background/worker-thread.ts)");
  const port = parentPort;
  const post = (message: FromThread, transfer: ArrayBuffer[] = []) => port.postMessage(message, transfer);
  if (handlers.open) {
    try {
      post({ ready: handlers.open() });
    } catch (err) {
      post({ openFailed: err instanceof Error ? err.message : String(err) });
      port.close();
      return;
    }
  }
  /** Requests being answered: `stop` waits for them. */
  const answering = new Set<Promise<void>>();

  async function answer(id: number, body: Request): Promise<void> {
    try {
      if (!handlers.handle) throw new Error("this thread takes no requests");
      const result = await handlers.handle(body);
      if (result instanceof Transferring) post({ answer: id, result: result.value }, result.transfer);
      else post({ answer: id, result });
    } catch (err) {
      const code = (err as { code?: unknown } | null)?.code;
      post({
        answer: id,
        error: { message: err instanceof Error ? err.message : String(err), code: typeof code === "string" ? code : undefined },
      });
    }
  }

  port.on("message", (message: ToThread) => {
    if ("stop" in message) {
      void Promise.all(answering).then(() => {
        handlers.close?.();
        port.close();
      });
      return;
    }
    const done = answer(message.request, message.body as Request);
    answering.add(done);
    void done.finally(() => answering.delete(done));
  });
}
