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
 *
 * The receiver runs in its own process (as a real one would), answering 204 with keep-alive.
 */
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { createInterface } from "node:readline";
import { Pool } from "undici";
import pino from "pino";
import { systemClock } from "../server/clock.ts";
import { openDatabase, countRows, type Db } from "../server/storage/db.ts";
import {
  createAddressPolicy,
  createDeliveryEngine,
  createDeliveryTables,
  dropDeliveryTables,
  fixedDelayPolicy,
  generateWebhookSecret,
  type Endpoint,
} from "../server/webhooks/index.ts";
import { identitySignature } from "../handlers/identity/domain/webhooks/area.ts";

const DELIVERIES = Number(process.env.BENCH_DELIVERIES ?? 20_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 50);
const secret = generateWebhookSecret();

async function startReceiver(): Promise<{ url: string; stop(): void }> {
  const code = `
    const http = require("node:http");
    const server = http.createServer((req, res) => { req.resume(); req.on("end", () => { res.writeHead(204); res.end(); }); });
    server.keepAliveTimeout = 60000;
    server.listen(0, "127.0.0.1", () => console.log(server.address().port));`;
  const child = spawn(process.execPath, ["-e", code], { stdio: ["ignore", "pipe", "inherit"] });
  const port = await new Promise<string>((resolve) => createInterface({ input: child.stdout! }).once("line", resolve));
  return { url: `http://127.0.0.1:${port}/hook`, stop: () => void child.kill("SIGKILL") };
}

const bodyOf = (id: string) =>
  JSON.stringify({ id, event: "user.created", timestamp: new Date().toISOString(), data: { userId: randomUUID(), email: "ada@example.com", firstName: "Ada", lastName: "Lovelace" } });

/** The ceiling: a Pool posting one signed body N times, CONCURRENCY at a time. */
async function ceiling(url: string): Promise<number> {
  const target = new URL(url);
  const pool = new Pool(target.origin, { connections: CONCURRENCY });
  const id = randomUUID();
  const body = Buffer.from(bodyOf(id));
  const headers = { "content-type": "application/json", ...identitySignature({ deliveryId: id, eventType: "user.created", timestamp: Math.floor(Date.now() / 1000), body, secrets: [secret] }) };
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next++ < DELIVERIES) {
        const res = await pool.request({ path: target.pathname, method: "POST", headers, body });
        await res.body.dump();
        if (res.statusCode !== 204) throw new Error(`receiver answered ${res.statusCode}`);
      }
    }),
  );
  const rate = DELIVERIES / ((performance.now() - started) / 1000);
  await pool.close();
  return rate;
}

/** The engine: N deliveries enqueued (not timed), then dispatched until every attempt row is written. */
async function engineRun(db: Db, url: string): Promise<number> {
  await db("webhook_attempts").delete();
  await db("webhook_deliveries").delete();
  const endpoint: Endpoint = { id: randomUUID(), url, secrets: [secret], active: true, retryPolicy: fixedDelayPolicy({ delaySeconds: 60, maxRetries: 3 }) };
  const engine = createDeliveryEngine({
    db,
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
          return { id, eventId: randomUUID(), endpointId: endpoint.id, eventType: "user.created", body: bodyOf(id), trigger: "event" as const, autoRetry: true };
        }),
      ),
    );
  }
  const started = performance.now();
  engine.start();
  for (;;) {
    await new Promise((r) => setTimeout(r, 25));
    if ((await countRows(db("webhook_attempts"))) >= DELIVERIES) break;
  }
  const rate = DELIVERIES / ((performance.now() - started) / 1000);
  await engine.stop();
  const failed = await countRows(db("webhook_attempts").where({ success: false }));
  if (failed) throw new Error(`${failed} attempts failed`);
  return rate;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function main() {
  const dir = mkdtempSync(join(tmpdir(), "bench-webhooks-"));
  const db = await openDatabase({
    service: process.env.BENCH_DATABASE_URL ? `bench_webhooks_${process.pid}` : "bench-webhooks",
    databaseUrl: process.env.BENCH_DATABASE_URL,
    dataDir: dir,
    migrations: { "0001_engine": { up: createDeliveryTables, down: dropDeliveryTables } },
  });
  const receiver = await startReceiver();
  const storage = process.env.BENCH_DATABASE_URL ? "PostgreSQL" : "SQLite";
  console.log(`webhook delivery benchmark: ${DELIVERIES} deliveries per run, concurrency ${CONCURRENCY}, ${ROUNDS} rounds, ${storage}`);
  try {
    await ceiling(receiver.url); // warm-up
    const raw: number[] = [];
    const engine: number[] = [];
    for (let round = 1; round <= ROUNDS; round++) {
      raw.push(await ceiling(receiver.url));
      engine.push(await engineRun(db, receiver.url));
      console.log(`  round ${round}: ceiling ${raw.at(-1)!.toFixed(0)}/s, engine ${engine.at(-1)!.toFixed(0)}/s`);
    }
    const ratio = median(engine) / median(raw);
    console.log(`engine: ${median(engine).toFixed(0)} signed deliveries/s (attempt rows persisted)`);
    console.log(`ceiling (undici Pool, same body, same receiver): ${median(raw).toFixed(0)} requests/s`);
    console.log(`ratio: ${ratio.toFixed(2)}x (target >= 0.5x)`);
  } finally {
    receiver.stop();
    if (process.env.BENCH_DATABASE_URL) await db.raw("DROP SCHEMA IF EXISTS ?? CASCADE", [`bench_webhooks_${process.pid}`]);
    await db.destroy();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
