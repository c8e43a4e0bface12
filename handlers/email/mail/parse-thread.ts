/**
 * Parsing off the event loop: one worker thread (parse-worker.js) that plans HTML bodies for
 * tracking and reads inbound reports. The rule: no parse of input a client chose runs on the event
 * loop, since its cost grows with the input (up to a 256 KiB body full of links, a 1 MiB report) and
 * on the loop it would stall every request of the process meanwhile. Here the loop only hands the
 * input over and takes the result back; requests queue on the thread in the order they came (the
 * worker-thread wrapper of ADR 0010).
 *
 * The service keeps one thread per kind of caller (its senders' HTML, the unauthenticated reports),
 * so a flood of reports never delays a send. The thread starts on the first request; a thread that
 * dies fails what it held (the caller answers 500, or 451 to a reporting MTA, which retries) and the
 * next request starts a new one.
 */
import { startWorkerThread } from "../../../server/background/worker-thread.ts";
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

/** A request to the thread (parse-worker.js). */
export type ParseRequest = { op: "plan"; html: string; maxLinks: number } | { op: "report"; raw: Uint8Array };

export function createParseThread(): ParseThread {
  // Through server/background/worker-thread.ts: started on the first request, again after one died.
  const thread = startWorkerThread({ url: new URL("./parse-worker.js", import.meta.url), name: "the parsing thread", start: "on-demand" });
  const ask = <T>(request: ParseRequest) => thread.request<T>(request);
  return {
    planHtml: (html, maxLinks) => ask<HtmlPlan>({ op: "plan", html, maxLinks }),
    // The bytes are copied over, never transferred: a small Buffer shares its memory with Node's pool.
    parseReport: (raw) => ask<ParsedReport>({ op: "report", raw: new Uint8Array(raw.buffer, raw.byteOffset, raw.byteLength) }),
    close: () => thread.terminate(),
  };
}
