// @ts-check
// A worker module for test/background/worker-thread.test.ts, served through
// server/background/thread-side.ts: `workerData.open` says what its opening does.
import { workerData } from "node:worker_threads";
import { serveThread, Transferring } from "../../server/background/thread-side.ts";

/** @type {{ open?: "hello" | "fail" }} */
const { open } = workerData ?? {};

/** @typedef {{ op: "echo", value: unknown } | { op: "fail" } | { op: "bytes", size: number } | { op: "after", ms: number, value: unknown } | { op: "exit" }} Request */

serveThread({
  ...(open
    ? {
        open() {
          if (open === "fail") throw new Error("cannot open the test database");
          return { greeting: "hello" };
        },
      }
    : {}),
  /** @param {Request} request */
  async handle(request) {
    switch (request.op) {
      case "echo":
        return request.value;
      case "fail":
        throw Object.assign(new Error("refused"), { code: "E_REFUSED" });
      case "bytes": {
        const bytes = new Uint8Array(request.size).fill(7);
        return new Transferring(bytes, [bytes.buffer]);
      }
      case "after":
        await new Promise((resolve) => setTimeout(resolve, request.ms));
        return request.value;
      case "exit":
        process.exit(3);
    }
  },
  close() {},
});
