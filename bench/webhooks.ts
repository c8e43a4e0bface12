/**
 * Webhook delivery throughput: signed deliveries per second through the engine (claimed under a
 * lease, signed per attempt with both identity schemes, POSTed with undici, one attempt row
 * persisted per delivery) against the raw ceiling measured in the same run: undici's Pool posting
 * the same signed body to the same receiver at the same concurrency. Runs alternate; medians are
 * reported. Not part of the test run.
 *
 *   npm run bench:webhooks                                    # SQLite, 20000 deliveries per run
 *   BENCH_DELIVERIES=5000 BENCH_ROUNDS=2 npm run bench:webhooks
 *   BENCH_DATABASE_URL=postgres://… npm run bench:webhooks     # PostgreSQL (a schema of its own)
 *   BENCH_PROFILE=<dir> npm run bench:webhooks                # a CPU profile of each engine run
 *   node --import tsx bench/profile-summary.ts <dir>          # where the profiled time went
 *
 * The receiver runs in its own process (as a real one would), answering 204 with keep-alive.
 */
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { createInterface } from "node:readline";
import { Pool } from "undici";
import pino from "pino";
import { systemClock } from "../server/clock.ts";
import { runProfiler } from "./cpuprofile.ts";
import { cpuMicrosOf, statFields, ticksToMicros } from "./lib/proc-cpu.ts";
import { openDatabase, countRows, type Database } from "../server/storage/db.ts";
import { transactor } from "../server/storage/transaction.ts";
import { createDeliveryStore } from "../server/webhooks/storage/index.ts";
import {
  createAddressPolicy,
  createDeliveryEngine,
  createDeliveryTables,
  dropDeliveryTables,
  fillDeliveryPages,
  fixedDelayPolicy,
  generateWebhookSecret,
  leaveRoomForLeases,
  type Endpoint,
} from "../server/webhooks/index.ts";
import { identitySignature } from "../handlers/identity/domain/webhooks/webhooks-area.ts";

const DELIVERIES = Number(process.env.BENCH_DELIVERIES ?? 20_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 50);
const secret = generateWebhookSecret();

/** BENCH_PROFILE=<dir>: a V8 CPU profile of each engine run's timed part (the engine runs in this process). */
const profile = runProfiler(process.env.BENCH_PROFILE, "engine");

/** A process's (or `self/task/<tid>`'s) /proc stat fields after its name (bench/lib/proc-cpu.ts). */
const statOf = (pid: number | string) => statFields(`/proc/${pid}/stat`);

/**
 * The local PostgreSQL server's processes, when the benchmark can see them (its postmaster's pid from
 * the data directory): their CPU counts against the same cores. NaN when not local or not readable.
 */
let postmasterPid: number | undefined;
async function findPostmaster(db: Database): Promise<void> {
  try {
    const dataDir = ((await db.raw("SHOW data_directory")) as { rows: Array<{ data_directory: string }> }).rows[0]!.data_directory;
    postmasterPid = Number(readFileSync(join(dataDir, "postmaster.pid"), "utf8").split("\n")[0]);
  } catch {
    postmasterPid = undefined;
  }
}

/** CPU µs of the PostgreSQL server: the postmaster, its reaped children (cutime, cstime) and its live ones. */
function databaseCpu(): number {
  if (!postmasterPid) return Number.NaN;
  try {
    const main = statOf(postmasterPid);
    let total = ticksToMicros(main[11], main[12], main[13], main[14]);
    for (const pid of readdirSync("/proc")) {
      if (!/^\d+$/.test(pid)) continue;
      try {
        const f = statOf(pid);
        if (Number(f[1]) === postmasterPid) total += ticksToMicros(f[11], f[12]);
      } catch {
        // exited meanwhile
      }
    }
    return total;
  } catch {
    return Number.NaN;
  }
}

/** CPU time (µs) used so far by this process, the receiver's and the database server's (Linux /proc; NaN elsewhere). */
function cpuNow(receiverPid: number | undefined): { self: number; receiver: number; database: number } {
  const { user, system } = process.cpuUsage();
  let receiver = Number.NaN;
  try {
    receiver = cpuMicrosOf(receiverPid!);
  } catch {
    // not Linux: the receiver's share is left out
  }
  return { self: user + system, receiver, database: databaseCpu() };
}

/**
 * CPU µs so far of this process's threads by kind (Linux thread names: the event loop's
 * `MainThread`, worker threads' `WorkerThread`, V8's compiler and garbage collector helpers
 * `V8Worker`, libuv's pool `libuv-worker`); empty elsewhere.
 */
function threadCpu(): Map<string, number> {
  const byKind = new Map<string, number>();
  try {
    for (const tid of readdirSync("/proc/self/task")) {
      try {
        const kind = readFileSync(`/proc/self/task/${tid}/comm`, "utf8").trim();
        const f = statOf(`self/task/${tid}`);
        byKind.set(kind, (byKind.get(kind) ?? 0) + ticksToMicros(f[11], f[12]));
      } catch {
        // ended meanwhile
      }
    }
  } catch {
    // not Linux
  }
  return byKind;
}

interface Run {
  rate: number;
  /** CPU µs per delivery: this process (client or engine), the receiver and the database server (PostgreSQL, local). */
  cpu: { self: number; receiver: number; database: number };
  /** Event-loop busy time per delivery (µs): what caps one process's rate, whatever its other threads do. */
  loop: number;
  /**
   * CPU µs per delivery of the event loop's thread alone: under load, the scheduler gives each
   * runnable thread its share, so this thread's cost caps the rate, and it moves less with the
   * machine's load than the busy time does.
   */
  loopCpu: number;
  /** CPU µs per delivery of the process's other threads, by kind (threadCpu). */
  threads: Map<string, number>;
}

/** Starts timing a run of DELIVERIES: wall time and the CPU time of both processes. */
function stopwatch(receiverPid: number | undefined): () => Run {
  const started = performance.now();
  const before = cpuNow(receiverPid);
  const loopBefore = performance.eventLoopUtilization();
  const threadBefore = process.threadCpuUsage();
  const threadsBefore = threadCpu();
  return () => {
    const threads = new Map<string, number>();
    for (const [kind, us] of threadCpu()) if (kind !== "MainThread") threads.set(kind, (us - (threadsBefore.get(kind) ?? 0)) / DELIVERIES);
    const thread = process.threadCpuUsage(threadBefore);
    const seconds = (performance.now() - started) / 1000;
    const after = cpuNow(receiverPid);
    return {
      rate: DELIVERIES / seconds,
      cpu: {
        self: (after.self - before.self) / DELIVERIES,
        receiver: (after.receiver - before.receiver) / DELIVERIES,
        database: (after.database - before.database) / DELIVERIES,
      },
      loop: (performance.eventLoopUtilization(loopBefore).active * 1000) / DELIVERIES,
      loopCpu: (thread.user + thread.system) / DELIVERIES,
      threads,
    };
  };
}

async function startReceiver(): Promise<{ url: string; pid: number | undefined; stop(): void }> {
  const code = `
    const http = require("node:http");
    const server = http.createServer((req, res) => { req.resume(); req.on("end", () => { res.writeHead(204); res.end(); }); });
    server.keepAliveTimeout = 60000;
    server.listen(0, "127.0.0.1", () => console.log(server.address().port));`;
  const child = spawn(process.execPath, ["-e", code], { stdio: ["ignore", "pipe", "inherit"] });
  const port = await new Promise<string>((resolve) => createInterface({ input: child.stdout! }).once("line", resolve));
  return { url: `http://127.0.0.1:${port}/hook`, pid: child.pid, stop: () => void child.kill("SIGKILL") };
}

const bodyOf = (id: string) =>
  JSON.stringify({
    id,
    event: "user.created",
    timestamp: new Date().toISOString(),
    data: { userId: randomUUID(), email: "ada@example.com", firstName: "Ada", lastName: "Lovelace" },
  });

/** The ceiling: a Pool posting one signed body N times, CONCURRENCY at a time. */
async function ceiling(url: string, receiverPid: number | undefined): Promise<Run> {
  const target = new URL(url);
  const pool = new Pool(target.origin, { connections: CONCURRENCY });
  const id = randomUUID();
  const body = Buffer.from(bodyOf(id));
  const headers = {
    "content-type": "application/json",
    ...identitySignature({ deliveryId: id, eventType: "user.created", timestamp: Math.floor(Date.now() / 1000), body, secrets: [secret] }),
  };
  let next = 0;
  const stop = stopwatch(receiverPid);
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next++ < DELIVERIES) {
        const res = await pool.request({ path: target.pathname, method: "POST", headers, body });
        await res.body.dump();
        if (res.statusCode !== 204) throw new Error(`receiver answered ${res.statusCode}`);
      }
    }),
  );
  const run = stop();
  await pool.close();
  return run;
}

/** The engine: N deliveries enqueued (not timed), then dispatched until every attempt row is written. */
async function engineRun(db: Database, url: string, receiverPid: number | undefined): Promise<Run> {
  await db("webhook_attempts").delete();
  await db("webhook_deliveries").delete();
  const endpoint: Endpoint = {
    id: randomUUID(),
    url,
    secrets: [secret],
    active: true,
    retryPolicy: fixedDelayPolicy({ delaySeconds: 60, maxRetries: 3 }),
  };
  // Progress from the engine itself: a record batch's promise settles once its transaction is
  // committed, so counting the attempts of committed batches tells when every delivery is recorded,
  // at no cost (polling count(*) cost O(rows) a call on the database and the event loop).
  const queries = createDeliveryStore(db);
  const recordAttempts = queries.recordAttempts;
  let recorded = 0;
  let allRecorded!: () => void;
  const finished = new Promise<void>((resolve) => (allRecorded = resolve));
  queries.recordAttempts = async (writes, at) => {
    await recordAttempts(writes, at);
    recorded += writes.length;
    if (recorded >= DELIVERIES) allRecorded();
  };
  const engine = createDeliveryEngine({
    queries,
    transaction: transactor(db),
    clock: systemClock,
    logger: pino({ level: "silent" }),
    sign: identitySignature,
    resolveEndpoints: async () => new Map([[endpoint.id, endpoint]]),
    addressPolicy: createAddressPolicy("127.0.0.1"),
    timeoutMs: 30_000,
    leaseMs: 60_000,
    pollIntervalMs: 1000,
    concurrency: CONCURRENCY,
  });
  for (let i = 0; i < DELIVERIES; i += 1000) {
    await db.transaction((trx) =>
      engine.enqueue(
        trx,
        Array.from({ length: Math.min(1000, DELIVERIES - i) }, () => {
          const id = randomUUID();
          return {
            id,
            eventId: randomUUID(),
            endpointId: endpoint.id,
            eventType: "user.created",
            body: bodyOf(id),
            trigger: "event" as const,
            autoRetry: true,
          };
        }),
      ),
    );
  }
  await profile.start();
  const stop = stopwatch(receiverPid);
  engine.start();
  await finished;
  const run = stop();
  await profile.stop();
  await engine.stop();
  // The end state, read back from the database: one attempt row per delivery, every one a success.
  const rows = await countRows(db("webhook_attempts"));
  if (rows !== DELIVERIES) throw new Error(`${rows} attempt rows for ${DELIVERIES} deliveries`);
  const failed = await countRows(db("webhook_attempts").where({ success: false }));
  if (failed) throw new Error(`${failed} attempts failed`);
  return run;
}

/** The other threads' CPU µs per delivery, by kind, those of at least 1 µs. */
const otherThreads = (r: Run) =>
  [...r.threads]
    .filter(([, us]) => us >= 1)
    .map(([kind, us]) => `, ${kind} ${us.toFixed(0)}`)
    .join("");

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function main() {
  const dir = mkdtempSync(join(tmpdir(), "bench-webhooks-"));
  const db = await openDatabase({
    service: process.env.BENCH_DATABASE_URL ? `bench_webhooks_${process.pid}` : "bench-webhooks",
    databaseUrl: process.env.BENCH_DATABASE_URL,
    dataDir: dir,
    migrations: {
      "0001_engine": { up: createDeliveryTables, down: dropDeliveryTables },
      "0002_room_for_leases": { up: leaveRoomForLeases, down: fillDeliveryPages },
    },
  });
  if (process.env.BENCH_DATABASE_URL) await findPostmaster(db);
  const receiver = await startReceiver();
  const storage = process.env.BENCH_DATABASE_URL ? "PostgreSQL" : "SQLite";
  console.log(`webhook delivery benchmark: ${DELIVERIES} deliveries per run, concurrency ${CONCURRENCY}, ${ROUNDS} rounds, ${storage}`);
  try {
    await ceiling(receiver.url, receiver.pid); // warm-up
    const raw: Run[] = [];
    const engine: Run[] = [];
    const cpu = (r: Run) =>
      `${r.cpu.self.toFixed(0)} µs CPU/delivery (receiver ${r.cpu.receiver.toFixed(0)}${Number.isNaN(r.cpu.database) ? "" : `, PostgreSQL ${r.cpu.database.toFixed(0)}`}), event loop ${r.loop.toFixed(0)} µs/delivery (its thread's CPU ${r.loopCpu.toFixed(0)}${otherThreads(r)})`;
    for (let round = 1; round <= ROUNDS; round++) {
      raw.push(await ceiling(receiver.url, receiver.pid));
      engine.push(await engineRun(db, receiver.url, receiver.pid));
      console.log(
        `  round ${round}: ceiling ${raw.at(-1)!.rate.toFixed(0)}/s, ${cpu(raw.at(-1)!)}; engine ${engine.at(-1)!.rate.toFixed(0)}/s, ${cpu(engine.at(-1)!)}`,
      );
    }
    const rates = (runs: Run[]) => runs.map((r) => r.rate);
    const ratio = median(rates(engine)) / median(rates(raw));
    const cpuOf = (runs: Run[]) => median(runs.map((r) => r.cpu.self));
    console.log(
      `engine: ${median(rates(engine)).toFixed(0)} signed deliveries/s (attempt rows persisted), ${cpuOf(engine).toFixed(0)} µs CPU per delivery in its process${postmasterPid ? ` (PostgreSQL's processes ${median(engine.map((r) => r.cpu.database)).toFixed(0)})` : ""}, event loop busy ${median(engine.map((r) => r.loop)).toFixed(0)} µs per delivery (its thread's CPU ${median(engine.map((r) => r.loopCpu)).toFixed(0)})`,
    );
    console.log(
      `ceiling (undici Pool, same body, same receiver): ${median(rates(raw)).toFixed(0)} requests/s, ${cpuOf(raw).toFixed(0)} µs CPU per request in its process (its event loop's thread ${median(raw.map((r) => r.loopCpu)).toFixed(0)})`,
    );
    const target = process.env.BENCH_DATABASE_URL ? 0.4 : 0.5;
    const perRound = engine.map((e, i) => e.rate / raw[i]!.rate);
    console.log(`ratio: ${ratio.toFixed(2)}x (target >= ${target}x); per-round ratios ${perRound.map((r) => r.toFixed(2)).join(", ")}`);
    // As every benchmark's verdict: met only when every round meets it.
    console.log(`verdict: engine >= ${target}x the ceiling in every round: ${perRound.every((r) => r >= target) ? "MET" : "NOT MET"}`);
  } finally {
    receiver.stop();
    if (process.env.BENCH_DATABASE_URL) await db.raw("DROP SCHEMA IF EXISTS ?? CASCADE", [`bench_webhooks_${process.pid}`]);
    await db.destroy();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
