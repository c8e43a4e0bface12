/**
 * The load client: undici's Pool with `concurrency` keep-alive connections, `concurrency` workers
 * each sending its next request as soon as the previous answer is read. Every request carries a
 * different body (a fresh code or refresh token); every answer must be 200 with an access token.
 */
import { performance } from "node:perf_hooks";
import { Pool } from "undici";

export interface RunResult {
  requests: number;
  seconds: number;
  rps: number;
  p50: number;
  p99: number;
  max: number;
  /** Non-200 answers (or 200 without an access token); a run with any is not a valid measurement. */
  errors: number;
  firstError?: string;
  /** The server's CPU time per request (µs, all its threads), when the driver measured it. */
  cpuMicrosPerRequest?: number;
  /** The server's event-loop busy time per request (µs): what caps a single-threaded server. */
  loopMicrosPerRequest?: number;
  /** The share of the machine's cores busy during the run (every process: servers, client, database, anything else). */
  machineBusy?: number;
  /** Several instances (BENCH_INSTANCES): each one's share of the CPU time, which shows how the kernel spread the connections. */
  cpuSharePerInstance?: number[];
  /** The `refresh_token` of each answer that had one, for the refresh run that follows. */
  refreshTokens: string[];
}

/** The `q` quantile of sorted latencies (nearest rank). */
export const quantile = (sorted: number[], q: number): number =>
  sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] ?? NaN;

export function createClient(url: string, concurrency: number): Pool {
  return new Pool(url, { connections: concurrency, pipelining: 1, keepAliveTimeout: 60_000 });
}

export async function runLoad(o: {
  pool: Pool;
  path: string;
  headers: Record<string, string>;
  bodies: string[];
  concurrency: number;
  expectJson: boolean;
}): Promise<RunResult> {
  const latencies = new Array<number>(o.bodies.length);
  const refreshTokens: string[] = [];
  let errors = 0;
  let firstError: string | undefined;
  let next = 0;
  const headers = { "content-type": "application/x-www-form-urlencoded", ...o.headers };
  const started = performance.now();
  await Promise.all(
    Array.from({ length: o.concurrency }, async () => {
      for (let i = next++; i < o.bodies.length; i = next++) {
        const t0 = performance.now();
        const res = await o.pool.request({ path: o.path, method: "POST", headers, body: o.bodies[i] });
        const text = await res.body.text();
        latencies[i] = performance.now() - t0;
        let ok = res.statusCode === 200;
        if (ok && o.expectJson) {
          const json = JSON.parse(text) as { access_token?: string; refresh_token?: string };
          ok = typeof json.access_token === "string";
          if (json.refresh_token) refreshTokens.push(json.refresh_token);
        }
        if (!ok) {
          errors++;
          firstError ??= `${res.statusCode} ${text.slice(0, 300)}`;
        }
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  const sorted = latencies.sort((a, b) => a - b);
  return {
    requests: o.bodies.length,
    seconds,
    rps: o.bodies.length / seconds,
    p50: quantile(sorted, 0.5),
    p99: quantile(sorted, 0.99),
    max: sorted[sorted.length - 1] ?? NaN,
    errors,
    ...(firstError ? { firstError } : {}),
    refreshTokens,
  };
}
