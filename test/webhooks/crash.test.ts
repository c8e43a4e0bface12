/**
 * Crash safety of the webhook engine: thousands of deliveries pending, the service process is
 * killed with SIGKILL mid-flight and restarted; every event must then reach the receiver at least
 * once, and a duplicate must carry the same delivery id (and the same bytes). On SQLite with one
 * process, and on PostgreSQL with two dispatching processes at a time (FOR UPDATE SKIP LOCKED).
 * PostgreSQL: CONFORMANCE_DATABASE_URL, or a throwaway cluster from scripts/postgres.sh.
 */
import { postgresDatabase } from "../support/postgres-database.ts";
import { describe, expect, it } from "vitest";
import { crashChildren, crashReceiver, stopAll, waitUntil } from "../support/crash-children.ts";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const EVENTS = 3000;
const CHILD = join(import.meta.dirname, "crash-child.ts");
const { cleanups, start } = crashChildren(CHILD);

/**
 * The receiver: records every delivery by its delivery id; answers 200 after a few ms, and 500 to
 * every 40th request (retries). While `gated` (the events are still being written) it holds its
 * answers, so that thousands are pending when the crash comes; held answers past the 1 s time-out
 * are failures.
 */
async function startReceiver() {
  let requests = 0;
  const held: Array<() => void> = [];
  let gated = true;
  const { base, log } = await crashReceiver<{ seq: number }>(cleanups, ({ req, res, body }, log) => {
    const n = ++requests;
    if (n % 40 === 0) return void res.writeHead(500).end();
    log.record(String(req.headers["x-webhook-delivery-id"]), body, () => ({ seq: JSON.parse(body).data.seq }));
    const answer = () => setTimeout(() => res.writeHead(200).end(), 3);
    if (gated) held.push(answer);
    else answer();
  });
  return {
    url: `${base}/hook`,
    byDelivery: log.byKey,
    requests: () => requests,
    repeatsAfterRestart: log.repeatsAfterRestart,
    restarted: log.restarted,
    open: () => {
      gated = false;
      for (const a of held.splice(0)) a();
    },
  };
}

async function crashAndRecover(storageEnv: Record<string, string>, instances: number) {
  const receiver = await startReceiver();
  const env = {
    ...storageEnv,
    LOG_LEVEL: "silent",
    IDENTITY_PORT: "0",
    WEBHOOK_ALLOW_PRIVATE_TARGETS: "127.0.0.1",
    WEBHOOK_REQUIRE_HTTPS: "false",
    WEBHOOK_POLL_INTERVAL_MS: "50",
    WEBHOOK_TIMEOUT_MS: "1000",
    WEBHOOK_LEASE_SECONDS: "1", // raised by the engine to 2 × time-out + 1 s = 3 s
    WEBHOOK_CONCURRENCY: "20",
  };
  const seeder = start(["seed", receiver.url, String(EVENTS)], env);
  await seeder.waitFor("webhook");
  const others = Array.from({ length: instances - 1 }, () => start(["run"], env));
  await seeder.waitFor("seeded", 60_000);
  receiver.open();
  await waitUntil(
    () => receiver.byDelivery.size >= 200,
    30_000,
    () => `${receiver.byDelivery.size} delivered before the crash`,
  );
  await stopAll([seeder, ...others], "SIGKILL");
  const atCrash = receiver.byDelivery.size;
  expect(atCrash).toBeLessThan(EVENTS - 1000); // thousands still pending when killed

  receiver.restarted();
  const restarted = Array.from({ length: instances }, () => start(["run"], env));
  await Promise.all(restarted.map((p) => p.waitFor("ready")));
  await waitUntil(
    () => receiver.byDelivery.size >= EVENTS,
    45_000,
    () => `${receiver.byDelivery.size} of ${EVENTS} delivered after restart`,
  );
  await stopAll(restarted, "SIGTERM");

  // Every event arrived, under exactly one delivery id, with identical bytes whenever repeated.
  const seqs = new Map<number, string>();
  let duplicates = 0;
  for (const [id, d] of receiver.byDelivery) {
    expect(d.mismatch, `delivery ${id} repeated with other bytes`).toBe(false);
    expect(seqs.has(d.seq), `event ${d.seq} under two delivery ids`).toBe(false);
    seqs.set(d.seq, id);
    duplicates += d.arrivals - 1;
  }
  expect(seqs.size).toBe(EVENTS);
  // Live dispatchers never send one attempt twice: repeats only come from the crash (attempts sent
  // but not yet recorded when the process died).
  expect(receiver.repeatsAfterRestart()).toBe(0);
  expect([...seqs.keys()].sort((a, b) => a - b)).toEqual(Array.from({ length: EVENTS }, (_, i) => i));
  return { atCrash, duplicates, requests: receiver.requests() };
}

describe("webhook delivery survives SIGKILL", () => {
  it("SQLite: one process killed mid-flight and restarted; every event delivered, duplicates only with the same delivery id", async () => {
    const dir = mkdtempSync(join(tmpdir(), "webhooks-crash-"));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const result = await crashAndRecover({ DATA_DIR: dir }, 1);
    console.log(
      `SQLite: ${result.atCrash}/${EVENTS} delivered at the crash, ${result.duplicates} duplicate deliveries, ${result.requests} requests`,
    );
  }, 240_000);

  it("PostgreSQL: two dispatching processes killed and two restarted; every event delivered, duplicates only with the same delivery id", async () => {
    const dir = mkdtempSync(join(tmpdir(), "webhooks-crash-"));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const url = await postgresDatabase(dir, "webhooks_crash", (c) => cleanups.push(c)); // cleanups run last first
    const result = await crashAndRecover({ DATA_DIR: dir, DATABASE_URL: url }, 2);
    console.log(
      `PostgreSQL: ${result.atCrash}/${EVENTS} delivered at the crash, ${result.duplicates} duplicate deliveries, ${result.requests} requests`,
    );
  }, 240_000);
});
