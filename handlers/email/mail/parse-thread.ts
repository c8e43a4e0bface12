/**
 * Parsing off the event loop: one worker thread (parse-worker.js) that plans HTML bodies for
 * tracking and reads inbound reports. Either parse of a large input (a 256 KiB body full of links, a
 * 1 MiB report) holds the thread that runs it for tens of milliseconds or more; on the event loop that
 * would stall every request of the process meanwhile. Here the loop only hands the input
 * over and takes the result back; requests queue on the thread in the order they came.
 *
 * The service keeps one thread per kind of caller (its senders' HTML, the unauthenticated reports),
 * so a flood of reports never delays a send. The thread starts on the first request; a thread that
 * dies fails what it held (the caller answers 500, or 451 to a reporting MTA, which retries) and the
 * next request starts a new one.
 */
import { Worker } from "node:worker_threads";
import type { HtmlPlan } from "./html-plan.ts";
import type { ParsedReport } from "./reports.ts";

export interface ParseThread {
  /** `planHtml(html, maxLinks)` (html-plan.ts), on the thread. */
  planHtml(html: string, maxLinks: number): Promise<HtmlPlan>;
  /** `parseReport(raw)` (reports.ts), on the thread. */
  parseReport(raw: Buffer): Promise<ParsedReport>;
  /** Stops the thread; a later request starts a new one. */
  close(): Promise<void>;
}

type Answer = { id: number; result: unknown } | { id: number; error: string };

export function createParseThread(): ParseThread {
  const pending = new Map<number, { worker: Worker; resolve(value: unknown): void; reject(err: Error): void }>();
  let nextId = 0;
  let worker: Worker | undefined;

  /** Fails what `w` held: the requests a newer thread holds are not its to fail. */
  function failAll(w: Worker, err: Error): void {
    for (const [id, p] of pending) {
      if (p.worker !== w) continue;
      pending.delete(id);
      p.reject(err);
    }
  }

  function start(): Worker {
    const w = new Worker(new URL("./parse-worker.js", import.meta.url));
    // Idle, it must not keep the process alive; the servers do.
    w.unref();
    w.on("message", (answer: Answer) => {
      const p = pending.get(answer.id);
      if (!p) return;
      pending.delete(answer.id);
      if ("error" in answer) p.reject(new Error(`parsing failed: ${answer.error}`));
      else p.resolve(answer.result);
    });
    w.on("error", (err) => {
      if (worker === w) worker = undefined;
      failAll(w, err);
    });
    w.on("exit", (code) => {
      if (worker === w) worker = undefined;
      failAll(w, new Error(`the parsing thread exited (code ${code})`));
    });
    return w;
  }

  function ask<T>(request: Record<string, unknown>): Promise<T> {
    const id = nextId++;
    return new Promise<T>((resolve, reject) => {
      worker ??= start();
      pending.set(id, { worker, resolve: resolve as (value: unknown) => void, reject });
      worker.postMessage({ ...request, id });
    });
  }

  return {
    planHtml: (html, maxLinks) => ask<HtmlPlan>({ op: "plan", html, maxLinks }),
    // The bytes are copied over, never transferred: a small Buffer shares its memory with Node's pool.
    parseReport: (raw) => ask<ParsedReport>({ op: "report", raw: new Uint8Array(raw.buffer, raw.byteOffset, raw.byteLength) }),
    async close() {
      const w = worker;
      worker = undefined;
      if (w) await w.terminate();
    },
  };
}
