/**
 * An open-loop load generator, as wrk2 and k6's constant-arrival-rate executor are: request i is
 * due at t0 + i / rate, whatever the answers before it did, and its latency is counted from that
 * due time, not from when it was sent. A stall of the server (or of this client) then shows in the
 * latency of every request that fell due during it; a closed loop, or timing from the send, would
 * send fewer requests during the stall and hide them (coordinated omission).
 *
 * Connections are not the limit: the pool opens up to `connections`, each with one request in
 * flight. The generator runs on the same machine as the server, so it measures its own lag (how late
 * it sent each request against its due time): a run whose generator lagged beyond LAG_BOUND_MS at
 * p99 is marked unreliable rather than counted as the server's.
 */
import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { Pool } from "undici";

/** The generator's own p99 lag beyond which a run does not measure the server. */
export const LAG_BOUND_MS = 5;

export interface OpenLoopRequest {
  path: string;
  method: "POST" | "GET";
  headers: Record<string, string>;
  body?: string;
}

export interface OpenLoopRun {
  /** Requests sent (every one that fell due). */
  requests: number;
  /** The rate asked for, and the rate answered: answers over the time from the first due time to the last answer. */
  offeredRate: number;
  achievedRate: number;
  /** Latency from each request's due time to its answer's end (ms), sorted. */
  latencies: number[];
  p50: number;
  p99: number;
  p999: number;
  max: number;
  /** Answers `accept` refused, and the first of them. */
  errors: number;
  firstError?: string;
  /** How late the generator sent requests against their due times (ms). */
  lagP99: number;
  lagMax: number;
  /** False when the generator's lag says the run measured this client, not the server. */
  reliable: boolean;
}

/** The `q` quantile of sorted values (nearest rank). */
export const quantileOf = (sorted: number[], q: number): number =>
  sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] ?? Number.NaN;

export function openLoopPool(url: string, connections: number): Pool {
  return new Pool(url, { connections, pipelining: 1, keepAliveTimeout: 60_000 });
}

/**
 * Sends `requests.length` requests at `rate` per second over `pool`. `accept` says whether an
 * answer is a success (and may keep what it needs of it, a refresh token say).
 */
export async function runOpenLoop(o: {
  pool: Pool;
  rate: number;
  requests: OpenLoopRequest[];
  accept: (status: number, body: string) => boolean;
}): Promise<OpenLoopRun> {
  const n = o.requests.length;
  const interval = 1000 / o.rate;
  const latencies = new Array<number>(n);
  const lags = new Array<number>(n);
  let errors = 0;
  let firstError: string | undefined;
  let lastAnswer = 0;
  const inFlight: Promise<void>[] = [];

  const send = async (i: number, due: number): Promise<void> => {
    const req = o.requests[i]!;
    let status = 0;
    let text = "";
    try {
      const res = await o.pool.request({ path: req.path, method: req.method, headers: req.headers, body: req.body ?? null });
      status = res.statusCode;
      text = await res.body.text();
    } catch (err) {
      text = err instanceof Error ? err.message : String(err);
    }
    const end = performance.now();
    latencies[i] = end - due;
    lastAnswer = Math.max(lastAnswer, end);
    if (!o.accept(status, text)) {
      errors++;
      firstError ??= `${status} ${text.slice(0, 300)}`;
    }
  };

  const t0 = performance.now() + 5;
  let next = 0;
  while (next < n) {
    const now = performance.now();
    // Every request now due goes out, late ones included: their lag is recorded, their latency counts from the due time.
    while (next < n && t0 + next * interval <= now) {
      const due = t0 + next * interval;
      lags[next] = now - due;
      inFlight.push(send(next, due));
      next++;
    }
    if (next >= n) break;
    // Sleep on a timer until the next request is due, never spin: the generator shares the machine's
    // cores with the server, and a busy wait (setImmediate) would take a core from it. A timer fires
    // no sooner than 1 ms, so at rates above 1000/s requests go out in small batches, each late by
    // under a tick: that lag is recorded, and their latencies count from their due times.
    const wait = t0 + next * interval - performance.now();
    await sleep(Math.max(1, Math.floor(wait)));
  }
  await Promise.all(inFlight);

  const sorted = latencies.sort((a, b) => a - b);
  const sortedLags = lags.sort((a, b) => a - b);
  const lagP99 = quantileOf(sortedLags, 0.99);
  return {
    requests: n,
    offeredRate: o.rate,
    achievedRate: n / ((lastAnswer - t0) / 1000),
    latencies: sorted,
    p50: quantileOf(sorted, 0.5),
    p99: quantileOf(sorted, 0.99),
    p999: quantileOf(sorted, 0.999),
    max: sorted[n - 1] ?? Number.NaN,
    errors,
    ...(firstError ? { firstError } : {}),
    lagP99,
    lagMax: sortedLags[n - 1] ?? Number.NaN,
    reliable: lagP99 <= LAG_BOUND_MS,
  };
}
