/**
 * bench/lib/open-loop.ts, the open-loop load generator of bench:latency: requests go out on their
 * schedule whatever the answers do, and a stall shows in the latency of every request that fell
 * due during it (latency counted from the due time, not the send: no coordinated omission).
 * Against a local server on 127.0.0.1 that answers at once, or holds one answer for a known time.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { performance } from "node:perf_hooks";
import { afterEach, describe, expect, it } from "vitest";
import { openLoopPool, runOpenLoop, type OpenLoopRequest } from "../../bench/lib/open-loop.ts";

let server: Server | undefined;
afterEach(() => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())));

/** A server that answers 200 at once, except request number `stallAt` (1-based), held `stallMs`; it records when each arrived. */
async function start(o: { stallAt?: number; stallMs?: number } = {}) {
  const arrivals: number[] = [];
  server = createServer((req, res) => {
    arrivals.push(performance.now());
    req.resume();
    req.on("end", () => {
      const answer = () => res.end("ok");
      if (arrivals.length === o.stallAt) setTimeout(answer, o.stallMs);
      else answer();
    });
  });
  await new Promise<void>((resolve) => server!.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, arrivals };
}

const requests = (n: number): OpenLoopRequest[] => Array.from({ length: n }, () => ({ path: "/", method: "GET", headers: {} }));
const accept = (status: number) => status === 200;

describe("open-loop load generator", () => {
  it("sends each request on its schedule: 400 at 400/s arrive over about one second and are all answered", async () => {
    const { url, arrivals } = await start();
    const pool = openLoopPool(url, 64);
    try {
      const started = performance.now();
      const run = await runOpenLoop({ pool, rate: 400, requests: requests(400), accept });
      expect(run.requests).toBe(400);
      expect(run.errors).toBe(0);
      expect(arrivals).toHaveLength(400);
      // Request i is due 2.5·i ms after the run starts, and none goes out before it is due: until then
      // at most i requests have been sent, so the (i+1)-th arrival is never sooner. A loaded machine
      // only makes arrivals later, so this holds however slow the run, unlike the span from the first
      // arrival (which a late first connection shortens).
      const early = arrivals.map((at, i) => ({ i, ahead: started + i * 2.5 - at })).filter((a) => a.ahead > 0);
      expect(early).toEqual([]);
      // Later only by what a loaded machine's scheduling adds to the last sends: a generous bound.
      expect(arrivals.at(-1)! - started).toBeLessThan(2500);
      expect(run.achievedRate).toBeGreaterThan(400 * 0.4);
      expect(run.achievedRate).toBeLessThan(400 * 1.05);
    } finally {
      await pool.close();
    }
  });

  it("counts each latency from the due time: one held answer on one connection delays every request due during it", async () => {
    // One connection: while answer 10 is held 300 ms, the requests due after it wait in the pool's
    // queue. Counted from their sends they would look fast; counted from their due times they are not.
    const { url } = await start({ stallAt: 10, stallMs: 300 });
    const pool = openLoopPool(url, 1);
    try {
      const run = await runOpenLoop({ pool, rate: 100, requests: requests(60), accept });
      expect(run.errors).toBe(0);
      expect(run.max).toBeGreaterThanOrEqual(290);
      // Due every 10 ms during the 300 ms: about 29 requests waited, the first of them about 290 ms.
      const delayed = run.latencies.filter((ms) => ms >= 50).length;
      expect(delayed).toBeGreaterThanOrEqual(20);
      expect(run.p99).toBeGreaterThanOrEqual(250);
    } finally {
      await pool.close();
    }
  });

  it("counts from the due time when the generator itself stalls, and marks that run unreliable", async () => {
    // The client's event loop is blocked 200 ms while it reads answer 10: the requests due meanwhile
    // go out late, all at once, and are answered at once. Counted from their sends they would look as
    // fast as the others; counted from their due times (as here) they carry the stall, and the
    // generator's lag says the run measured the client.
    const { url } = await start();
    const pool = openLoopPool(url, 64);
    let answers = 0;
    try {
      const run = await runOpenLoop({
        pool,
        rate: 100,
        requests: requests(60),
        accept: (status) => {
          if (++answers === 10) {
            const until = performance.now() + 200;
            while (performance.now() < until);
          }
          return status === 200;
        },
      });
      expect(run.errors).toBe(0);
      expect(run.lagMax).toBeGreaterThanOrEqual(180);
      expect(run.reliable).toBe(false);
      // Due every 10 ms during the 200 ms: about 19 requests sent late, the first of them by about 190 ms.
      expect(run.max).toBeGreaterThanOrEqual(180);
      expect(run.latencies.filter((ms) => ms >= 50).length).toBeGreaterThanOrEqual(12);
    } finally {
      await pool.close();
    }
  });
});
