/**
 * Token endpoint benchmark: requests per second of
 *   (a) the authorization_code + PKCE exchange with `offline_access` (a refresh token is issued and
 *       stored),
 *   (b) the refresh_token grant (rotation: the old token is used up, a new one stored), and
 *   (c) the client_credentials grant (the client for itself: a JWT access token for one API by
 *       `resource`, no refresh token, nothing stored),
 * on our identity service with SQLite (or PostgreSQL), against each of its peers configured to do the
 * same work (same grants, ES256 tokens, the same confidential client with client_secret_basic), and
 * against the ceiling: a bare Koa endpoint that only parses the form. Not part of the test run.
 *
 * The peers and their targets are the table in bench/token/peers.ts; BENCH_PEERS (a comma list,
 * default `oidc-provider-durable,oidc-provider-memory`) chooses them:
 *   oidc-provider-durable  oidc-provider on a durable store on ours' engine (SQLite, or PostgreSQL on
 *                          BENCH_DATABASE_URL's server): ours ≥ 1.5× on either engine;
 *   oidc-provider-memory   oidc-provider's in-memory store, which keeps nothing: ≥ 1.0× on SQLite,
 *                          shown as context on PostgreSQL;
 *   keycloak               Keycloak on the same PostgreSQL (bench/token/keycloak.ts): ≥ 4×.
 * Every grant gets a verdict per peer, met only when every round meets it. The closed-loop p50/p99
 * are figures without a verdict: latency's target is measured at a fixed offered rate, not here.
 *
 *   npm run bench:token
 *   BENCH_REQUESTS=2000 BENCH_ROUNDS=5 npm run bench:token
 *   BENCH_LOG_LEVEL=silent npm run bench:token       # ours without its per-request log line
 *   BENCH_DATABASE_URL=postgres://… npm run bench:token   # ours and the durable peer on PostgreSQL
 *                                                     # (ours' identity schema and theirs' oidc_provider_bench dropped first)
 *   BENCH_PEERS=oidc-provider-durable npm run bench:token   # one peer
 *   BENCH_DATABASE_URL=postgres://… BENCH_PEERS=keycloak npm run bench:token
 *   BENCH_PROFILE=ours BENCH_PROFILE_DIR=/tmp/prof npm run bench:token   # V8 CPU profile of one server
 *                                                     # (or a peer's name: BENCH_PROFILE=oidc-provider-durable)
 *   BENCH_INSTANCES=2 npm run bench:token   # ours as 2 processes on one port and one database
 *
 * BENCH_THEIRS_STORE (memory, sqlite or postgres), the single-peer setting BENCH_PEERS replaces, still
 * works: without BENCH_PEERS it picks the one peer it used to (the in-memory store, or the durable store
 * it names); with it, it names the durable peer's store. A durable store other than ours' engine is
 * shown as context, without a verdict.
 *
 * BENCH_INSTANCES=N (default 1) runs ours as N processes listening on one port with SO_REUSEPORT
 * (the kernel spreads the 50 connections over them, with no hop through a primary as node:cluster's
 * round robin would add), all on the one SQLite file (WAL: one writer at a time, the others wait in
 * SQLite's busy handler, which sleeps on their event loop) or the one PostgreSQL schema. The first
 * instance mints the codes; whichever instance a connection landed on exchanges them, through the
 * database they share. CPU and event-loop time per request are then the sums over the instances.
 * Every peer stays one process, so the comparison is then ours on N processes against a peer on one,
 * and no target gets a verdict.
 *
 * Each server runs in its own process; this process is the load client (undici, 50 keep-alive
 * connections). Codes are fresh for every request: minted before each timed run, through each
 * server's own code-issuing path, in its process (not timed). The refresh run uses the refresh tokens
 * the code run before it was given. A round takes the peers in turn (which goes first rotates round
 * by round); against each, every grant runs ours then the peer, so the two runs of a ratio are next to
 * each other in time; each round ends with the ceiling. A run with any non-200 answer is reported and
 * fails the benchmark.
 */
import { cpus } from "node:os";
import type { RunResult } from "./token/load.ts";
import { choosePeers, GRANTS, type Grant, type Peer, type RunSetting, targetOf } from "./token/peers.ts";
import { clientCredentialsBodies, codeBodies, mint, refreshBodies, runAgainst, startServer, type Server } from "./token/process.ts";
import { cpu, f0, loop, median, type Pairing, resultsTable, verdictLines } from "./token/report.ts";

const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 3000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 50);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 1000);
/** Processes of ours (each peer and the ceiling stay one each). */
const INSTANCES = Number(process.env.BENCH_INSTANCES ?? 1);
const { peers: PEERS, theirsStore } = choosePeers(process.env);
const SETTING: RunSetting = {
  engine: process.env.BENCH_DATABASE_URL ? "PostgreSQL" : "SQLite",
  concurrency: CONCURRENCY,
  instances: INSTANCES,
  ...(theirsStore ? { theirsStore } : {}),
};
/** A stuck server must not hang the benchmark: everything is stopped after this (a durable peer commits each write). */
const DEADLINE_MS = Number(process.env.BENCH_DEADLINE_SECONDS ?? 900 * PEERS.length) * 1000;

function check(label: string, r: RunResult): RunResult {
  if (r.errors) throw new Error(`${label}: ${r.errors} of ${r.requests} requests failed; first: ${r.firstError}`);
  return r;
}

/** Fresh codes minted (not timed), then one timed exchange run; its refresh tokens feed the refresh run. */
async function codeRun(label: string, server: Server, count: number): Promise<RunResult> {
  const codes = await mint(server, count);
  const run = check(`${label} authorization_code`, await runAgainst(server, codeBodies(server, codes), CONCURRENCY));
  if (run.refreshTokens.length !== count) throw new Error(`${label}: an exchange answered without a refresh token`);
  return run;
}

/** One server's timed runs of the grants asked for, code first (its refresh tokens feed the refresh run). */
async function runGrant(label: string, server: Server, grant: Grant, previousCode?: RunResult): Promise<RunResult> {
  if (grant === "code") return codeRun(label, server, REQUESTS);
  if (grant === "refresh") {
    if (!previousCode) throw new Error(`${label}: a refresh run needs the code run before it`);
    return check(`${label} refresh_token`, await runAgainst(server, refreshBodies(previousCode.refreshTokens), CONCURRENCY));
  }
  return check(`${label} client_credentials`, await runAgainst(server, clientCredentialsBodies(REQUESTS), CONCURRENCY));
}

/** Untimed: JIT, connections, the store's pages. */
async function warmUp(label: string, server: Server, grants: readonly Grant[]): Promise<void> {
  if (grants.includes("code")) {
    const warm = await codeRun(`${label} (warm-up)`, server, WARMUP);
    if (grants.includes("refresh"))
      check(`${label} refresh (warm-up)`, await runAgainst(server, refreshBodies(warm.refreshTokens), CONCURRENCY));
  }
  if (grants.includes("cc"))
    check(`${label} client_credentials (warm-up)`, await runAgainst(server, clientCredentialsBodies(WARMUP), CONCURRENCY));
}

const grantsOf = (peer: Peer) => peer.grants ?? GRANTS;
const busy = (r: RunResult) => f0(100 * (r.machineBusy ?? NaN));
/** How a run's CPU time split over ours' instances, in percent: "52/48". */
const split = (r: RunResult) => (r.cpuSharePerInstance ?? []).map((x) => f0(100 * x)).join("/");

/**
 * One round against one peer: for each grant, ours' run then the peer's, so that the two runs of a
 * ratio are next to each other in time.
 */
async function roundAgainst(round: number, ours: Server, peer: Peer, theirs: Server, pairings: Pairing[]): Promise<void> {
  const oursRuns: Partial<Record<Grant, RunResult>> = {};
  const theirsRuns: Partial<Record<Grant, RunResult>> = {};
  for (const grant of grantsOf(peer)) {
    oursRuns[grant] = await runGrant("ours", ours, grant, oursRuns.code);
    theirsRuns[grant] = await runGrant(peer.name, theirs, grant, theirsRuns.code);
  }
  const parts: string[] = [];
  for (const grant of grantsOf(peer)) {
    const o = oursRuns[grant]!;
    const t = theirsRuns[grant]!;
    const pairing = pairings.find((p) => p.peer === peer && p.grant === grant)!;
    pairing.ours.push(o);
    pairing.theirs.push(t);
    parts.push(
      `${grant} ${f0(o.rps)}/${f0(t.rps)}/s (CPU ${f0(cpu(o))}/${f0(cpu(t))}, loop ${f0(loop(o))}/${f0(loop(t))} µs/req, busy ${busy(o)}/${busy(t)}%` +
        (INSTANCES > 1 ? `, ours by instance ${split(o)}` : "") +
        ")",
    );
  }
  console.log(`  round ${round} vs ${peer.name} (ours/peer): ${parts.join("; ")}`);
}

async function main(): Promise<void> {
  const started = Date.now();
  console.log(
    `token endpoint benchmark (ours on ${SETTING.engine}${INSTANCES > 1 ? `, ${INSTANCES} instances` : ""}; peers ${PEERS.map((p) => p.name).join(", ")}): ${ROUNDS} rounds x ${REQUESTS} requests per run, ${CONCURRENCY} connections, ${cpus().length} CPUs (${cpus()[0]?.model.trim()}), Node ${process.version}`,
  );
  const servers: Server[] = [];
  const deadline = setTimeout(() => {
    console.error(`deadline of ${DEADLINE_MS / 1000} s passed: stopping`);
    process.exitCode = 1;
    void Promise.all(servers.map((s) => s.stop())).finally(() => process.exit(1));
  }, DEADLINE_MS);
  try {
    if (!Number.isInteger(INSTANCES) || INSTANCES < 1) throw new Error(`BENCH_INSTANCES must be a positive integer, not ${INSTANCES}`);
    const ours = await startServer("ours", CONCURRENCY, INSTANCES);
    servers.push(ours);
    const theirs = new Map<Peer, Server>();
    for (const peer of PEERS) {
      const server = await peer.start(SETTING);
      servers.push(server);
      theirs.set(peer, server);
    }
    const ceiling = await startServer("ceiling", CONCURRENCY);
    servers.push(ceiling);
    console.log(`  ${"ours".padEnd(22)} ${ours.url}${ours.tokenPath}  ${ours.notes}`);
    for (const [peer, s] of theirs) console.log(`  ${peer.name.padEnd(22)} ${s.url}${s.tokenPath}  ${s.notes}`);
    console.log(`  ${"ceiling".padEnd(22)} ${ceiling.url}${ceiling.tokenPath}  ${ceiling.notes}`);

    await warmUp("ours", ours, GRANTS);
    for (const [peer, s] of theirs) await warmUp(peer.name, s, grantsOf(peer));
    await runAgainst(ceiling, codeBodies(ceiling, await mint(ceiling, WARMUP)), CONCURRENCY);

    const pairings: Pairing[] = PEERS.flatMap((peer) =>
      grantsOf(peer).map((grant) => ({ grant, peer, target: targetOf(peer, grant, SETTING), ours: [], theirs: [] })),
    );
    const ceilings: RunResult[] = [];
    for (let round = 1; round <= ROUNDS; round++) {
      // The peers take turns going first, so that none is always measured right after the same one.
      const order = PEERS.map((_, i) => PEERS[(i + round - 1) % PEERS.length]!);
      for (const peer of order) await roundAgainst(round, ours, peer, theirs.get(peer)!, pairings);
      const ceil = check("ceiling", await runAgainst(ceiling, codeBodies(ceiling, await mint(ceiling, REQUESTS)), CONCURRENCY));
      ceilings.push(ceil);
      console.log(`  round ${round} ceiling: ${f0(ceil.rps)}/s (CPU ${f0(cpu(ceil))}, loop ${f0(loop(ceil))} µs/req)`);
    }

    const ceilingRps = median(ceilings.map((r) => r.rps));
    console.log(`\nceiling (bare Koa, form parsing only): ${f0(ceilingRps)} req/s (median of ${ceilings.length} runs)\n`);
    console.log(resultsTable(pairings, ceilingRps));
    console.log("");
    for (const line of verdictLines(pairings, SETTING)) console.log(line);
    console.log(`(${f0((Date.now() - started) / 1000)} s in all)`);
  } finally {
    clearTimeout(deadline);
    await Promise.all(servers.map((s) => s.stop()));
  }
}

main().catch((err) => {
  console.error(err instanceof Error ? err.message : err);
  process.exitCode = 1;
});
