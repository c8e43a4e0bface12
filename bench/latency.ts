/**
 * Latency at a fixed offered rate: the identity token endpoint (the authorization_code + PKCE
 * exchange, then the refresh rotation of the tokens it answered) and the email service's
 * `POST /v1/emails`, each driven open loop (bench/lib/open-loop.ts: request i due at i / rate, its latency
 * counted from that due time, so a stall is not hidden) at BENCH_RATE requests per second for
 * BENCH_DURATION_SECONDS, BENCH_ROUNDS times. Target, every round: p99 ≤ 25 ms with the rate achieved
 * within 1 % of the offered, no error, and a generator that kept its schedule. Not part of the test run.
 *
 *   npm run bench:latency
 *   BENCH_DATABASE_URL=postgres://… npm run bench:latency   # both services on PostgreSQL
 *   BENCH_TARGETS=token npm run bench:latency               # token, email, or both (default)
 *   BENCH_RATE=500 BENCH_DURATION_SECONDS=20 BENCH_ROUNDS=5 npm run bench:latency
 *   BENCH_PROFILE=ours BENCH_PROFILE_DIR=/tmp/prof npm run bench:latency   # CPU profiles of the identity server's runs
 *   BENCH_EMAIL_PROFILE=/tmp/prof npm run bench:latency                     # a CPU profile of the email service
 *
 * Each service runs in processes of its own, as bench:token and bench:email start them (identity as
 * `ours`, at its production log level; email with its SMTP relay, a sink in another process, and
 * no per-key rate limit, which would measure the policy). Codes are minted through identity's own
 * path before each run, not timed. Email delivers what it accepted while it accepts (the real
 * service's work at that rate); each round starts once the sink has every message of the last.
 */
import { cpus, loadavg } from "node:os";
import { LAG_BOUND_MS, openLoopPool, runOpenLoop, type OpenLoopRequest, type OpenLoopRun } from "./lib/open-loop.ts";
import { cpuMsOf, receipt, startEmailService, waitForSink } from "./email-service.ts";
import { basic, codeBodies, mint, refreshBodies, startServer, type Server } from "./token/process.ts";

const RATE = Number(process.env.BENCH_RATE ?? 1000);
const DURATION_SECONDS = Number(process.env.BENCH_DURATION_SECONDS ?? 20);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
/** Enough that connections never limit the rate: an answer late by this many requests' intervals still finds one free. */
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 512);
const TARGETS = (process.env.BENCH_TARGETS ?? "token,email").split(",").map((t) => t.trim());
const ENGINE = process.env.BENCH_DATABASE_URL ? "PostgreSQL" : "SQLite";
/** The target: p99 at the offered rate, and the rate achieved within 1 % of it. */
const P99_TARGET_MS = 25;
const RATE_SHORTFALL = 0.01;

const REQUESTS = Math.round(RATE * DURATION_SECONDS);
const WARMUP = Math.min(REQUESTS, Math.round(RATE * 3));

interface Measured {
  target: string;
  round: number;
  run: OpenLoopRun;
  /** The service's CPU per request (µs, all its threads), and its event loop's busy share when known. */
  cpuMicros: number;
  loopBusy?: number;
}

const met = (r: OpenLoopRun) =>
  r.errors === 0 && r.reliable && r.p99 <= P99_TARGET_MS && r.achievedRate >= r.offeredRate * (1 - RATE_SHORTFALL);

const f1 = (n: number) => n.toFixed(1);

function report(m: Measured): void {
  const r = m.run;
  console.log(
    `  round ${m.round} ${m.target.padEnd(22)} ${r.requests} at ${r.offeredRate}/s: achieved ${f1(r.achievedRate)}/s; ` +
      `p50 ${f1(r.p50)} p99 ${f1(r.p99)} p999 ${f1(r.p999)} max ${f1(r.max)} ms; errors ${r.errors}; ` +
      `generator lag p99 ${f1(r.lagP99)} max ${f1(r.lagMax)} ms${r.reliable ? "" : " (UNRELIABLE: the generator fell behind)"}; ` +
      `CPU ${m.cpuMicros.toFixed(0)} µs/req${m.loopBusy === undefined ? "" : `, event loop busy ${(m.loopBusy * 100).toFixed(0)} %`}` +
      ` → ${met(r) ? "met" : "not met"}`,
  );
  if (r.firstError) console.log(`    first error: ${r.firstError}`);
}

/** The token endpoint: a code exchange run, then a refresh run over the refresh tokens it answered. */
async function tokenRuns(server: Server, round: number, count: number): Promise<Measured[]> {
  const headers = { authorization: basic(server.client), "content-type": "application/x-www-form-urlencoded" };
  const asRequests = (bodies: string[]): OpenLoopRequest[] =>
    bodies.map((body) => ({ path: server.tokenPath, method: "POST", headers, body }));
  const measured: Measured[] = [];
  let refreshTokens: string[] = [];
  const timed = async (target: string, bodies: string[]) => {
    refreshTokens = [];
    const before = await server.call({ type: "cpu", phase: "start" });
    const run = await runOpenLoop({
      pool: server.pool,
      rate: RATE,
      requests: asRequests(bodies),
      accept: (status, text) => {
        if (status !== 200) return false;
        const json = JSON.parse(text) as { access_token?: string; refresh_token?: string };
        if (json.refresh_token) refreshTokens.push(json.refresh_token);
        return typeof json.access_token === "string";
      },
    });
    const after = await server.call({ type: "cpu", phase: "end" });
    if (before.type !== "cpu" || after.type !== "cpu") throw new Error("identity: no CPU reading");
    const seconds = run.requests / run.achievedRate;
    const m: Measured = {
      target,
      round,
      run,
      cpuMicros: (after.micros - before.micros) / run.requests,
      loopBusy: (after.loopMicros - before.loopMicros) / 1e6 / seconds,
    };
    if (round > 0) report(m);
    measured.push(m);
  };
  await timed(`token code (${ENGINE})`, codeBodies(server, await mint(server, count)));
  await timed(`token refresh (${ENGINE})`, refreshBodies(refreshTokens));
  return measured;
}

async function tokenTargets(): Promise<Measured[]> {
  const server = await startServer("ours", CONNECTIONS);
  // The pool the server came with has CONNECTIONS connections; this run opens them as it needs.
  try {
    console.log(`identity: ${server.url}${server.tokenPath} (${server.notes})`);
    await tokenRuns(server, 0, WARMUP);
    const all: Measured[] = [];
    for (let round = 1; round <= ROUNDS; round++) all.push(...(await tokenRuns(server, round, REQUESTS)));
    return all;
  } finally {
    await server.stop();
  }
}

async function emailTargets(): Promise<Measured[]> {
  // BENCH_EMAIL_PROFILE=<dir>: a V8 CPU profile of the email service's whole process, written when it exits.
  const profileDir = process.env.BENCH_EMAIL_PROFILE;
  const { url, apiKey, sink, service, stop } = await startEmailService({
    keyName: "latency",
    env: { EMAIL_RATE_LIMIT_PER_SECOND: "0" },
    ...(profileDir ? { nodeOptions: ["--cpu-prof", `--cpu-prof-dir=${profileDir}`] } : {}),
  });
  const pool = openLoopPool(url, CONNECTIONS);
  const headers = { authorization: `Bearer ${apiKey}`, "content-type": "application/json" };
  const target = `email POST (${ENGINE})`;
  const all: Measured[] = [];
  try {
    console.log(`email: ${url}/v1/emails, relaying to the sink on port ${sink.port}`);
    let sent = 0;
    for (let round = 0; round <= ROUNDS; round++) {
      const count = round === 0 ? WARMUP : REQUESTS;
      // Each round starts with nothing left to deliver from the one before.
      await waitForSink(sink, sent);
      const requests: OpenLoopRequest[] = Array.from({ length: count }, (_, i) => ({
        path: "/v1/emails",
        method: "POST",
        headers,
        body: receipt(sent + i, `latency-${round}`),
      }));
      const cpuBefore = cpuMsOf(service.pid!);
      const run = await runOpenLoop({ pool, rate: RATE, requests, accept: (status) => status === 202 });
      sent += count;
      const m: Measured = { target, round, run, cpuMicros: ((cpuMsOf(service.pid!) - cpuBefore) * 1000) / count };
      if (round > 0) {
        report(m);
        all.push(m);
      }
    }
    return all;
  } finally {
    await pool.close();
    await stop();
  }
}

async function main(): Promise<void> {
  console.log(
    `latency at a fixed offered rate: ${RATE}/s for ${DURATION_SECONDS} s (${REQUESTS} requests), ${ROUNDS} rounds, up to ${CONNECTIONS} connections, ${ENGINE}; ` +
      `${cpus().length} cores, load average ${loadavg()
        .map((l) => l.toFixed(1))
        .join(" ")}`,
  );
  const all: Measured[] = [];
  if (TARGETS.includes("token")) all.push(...(await tokenTargets()));
  if (TARGETS.includes("email")) all.push(...(await emailTargets()));

  console.log(
    `\nverdicts (every round: p99 ≤ ${P99_TARGET_MS} ms, rate within ${RATE_SHORTFALL * 100} % of ${RATE}/s, no error, generator lag p99 ≤ ${LAG_BOUND_MS} ms):`,
  );
  const targets = [...new Set(all.map((m) => m.target))];
  let metCount = 0;
  for (const target of targets) {
    const runs = all.filter((m) => m.target === target).map((m) => m.run);
    const ok = runs.every(met);
    if (ok) metCount++;
    console.log(
      `  ${ok ? "MET    " : "NOT MET"} ${target.padEnd(22)} p99 ${runs.map((r) => f1(r.p99)).join(", ")} ms; ` +
        `p999 ${runs.map((r) => f1(r.p999)).join(", ")} ms; achieved ${runs.map((r) => f1(r.achievedRate)).join(", ")}/s` +
        `${runs.some((r) => !r.reliable) ? "; a round's generator fell behind" : ""}`,
    );
  }
  console.log(`targets met: ${metCount} of ${targets.length}; load average at the end ${loadavg()[0]!.toFixed(1)}`);
}

await main();
