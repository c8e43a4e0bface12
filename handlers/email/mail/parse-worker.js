// @ts-check
// The parsing thread of parse-thread.ts: plans an HTML body for tracking (parse5) or reads a bounce or
// complaint report (mailparser), one request at a time as they come, and answers each with
// { id, result } or { id, error }. The two modules it runs are erasable TypeScript that import only
// their parser, so Node loads them here as they are, under `node --import tsx` and under vitest alike.
import { parentPort } from "node:worker_threads";
import { planHtml } from "./html-plan.ts";
import { parseReport } from "./reports.ts";

/** @typedef {{ id: number, op: "plan", html: string, maxLinks: number } | { id: number, op: "report", raw: Uint8Array }} Request */

if (!parentPort) throw new Error("parse-worker.js runs as a worker thread of parse-thread.ts");
const port = parentPort;

port.on("message", async (/** @type {Request} */ request) => {
  try {
    if (request.op === "plan") {
      const plan = planHtml(request.html, request.maxLinks);
      // The offsets move over without a copy: their buffer is the plan's own.
      port.postMessage({ id: request.id, result: plan }, [/** @type {ArrayBuffer} */ (plan.spans.buffer)]);
    } else {
      const raw = Buffer.from(request.raw.buffer, request.raw.byteOffset, request.raw.byteLength);
      port.postMessage({ id: request.id, result: await parseReport(raw) });
    }
  } catch (err) {
    port.postMessage({ id: request.id, error: err instanceof Error ? err.message : String(err) });
  }
});
