// @ts-check
// The parsing thread of parse-thread.ts: plans an HTML body for tracking (parse5) or reads a bounce or
// complaint report (mailparser), one request at a time as they come. Served through
// server/background/thread-side.ts. The modules it runs are erasable TypeScript that import only
// their parser, so Node loads them here as they are, under `node --import tsx` and under vitest alike.
import { serveThread, Transferring } from "../../../server/background/thread-side.ts";
import { planHtml } from "./html-plan.ts";
import { parseReport } from "./reports.ts";

serveThread({
  /** @param {import("./parse-thread.ts").ParseRequest} request */
  async handle(request) {
    if (request.op === "plan") {
      const plan = planHtml(request.html, request.maxLinks);
      // The offsets move over without a copy: their buffer is the plan's own.
      return new Transferring(plan, [/** @type {ArrayBuffer} */ (plan.spans.buffer)]);
    }
    return parseReport(Buffer.from(request.raw.buffer, request.raw.byteOffset, request.raw.byteLength));
  },
});
