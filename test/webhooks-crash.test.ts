/**
 * Crash safety of the webhook engine: thousands of deliveries pending, the service process is
 * killed with SIGKILL mid-flight and restarted; every event must then reach the receiver at least
 * once, and a duplicate must carry the same delivery id (and the same bytes). On SQLite with one
 * process, and on PostgreSQL with two dispatching processes at a time (FOR UPDATE SKIP LOCKED).
 * PostgreSQL: CONFORMANCE_DATABASE_URL, or a throwaway cluster from scripts/postgres.sh.
 */
import { postgresDatabase } from "./postgres-database.ts";
import { describe, expect, it } from "vitest";
import { crashChildren } from "./crash-children.ts";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";

const EVENTS = 3000;
const CHILD = join(import.meta.dirname, "webhooks-crash-child.ts");
const { cleanups, start: startChild } = crashChildren(CHILD);

/**
 * The receiver: records every delivery; answers 200 after a few ms, and 500 to every 40th request
 * (retries). While `gated` (the events are still being written) it holds its answers, so that
 * thousands are pending when the crash comes; held answers past the 1 s time-out are failures.
 */
async function startReceiver() {
  const byDelivery = new Map<string, { seq: number; body: string; times: number; phase: number }>();
  let requests = 0;
  let phase = 0; // 0 before the crash, 1 after the restart
  let repeatsAfterRestart = 0; // a delivery first received after the restart, received again
  const held: Array<() => void> = [];
  let gated = true;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const n = ++requests;
      if (n % 40 === 0) return void res.writeHead(500).end();
      const body = Buffer.concat(chunks).toString("utf8");
      const id = String(req.headers["x-webhook-delivery-id"]);
      const seen = byDelivery.get(id);
      if (seen) {
        seen.times++;
        if (seen.phase === 1) repeatsAfterRestart++;
        if (seen.body !== body) seen.body = "MISMATCH";
      } else {
        byDelivery.set(id, { seq: JSON.parse(body).data.seq, body, times: 1, phase });
      }
      const answer = () => setTimeout(() => res.writeHead(200).end(), 3);
      if (gated) held.push(answer);
      else answer();
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  cleanups.push(() => {
    server.closeAllConnections();
    return new Promise<void>((r) => server.close(() => r()));
  });
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    byDelivery,
    requests: () => requests,
    repeatsAfterRestart: () => repeatsAfterRestart,
    restarted: () => void (phase = 1),
    open: () => {
      gated = false;
      for (const a of held.splice(0)) a();
    },
  };
}

function start(args: string[], env: Record<string, string>) {
  const child = startChild(args, env);
  const lines: any[] = [];
  createInterface({ input: child.stdout! }).on("line", (l) => lines.push(JSON.parse(l)));
  const waitFor = async (key: string, timeoutMs = 30_000) => {
    const deadline = Date.now() + timeoutMs;
    while (!lines.some((l) => key in l)) {
      if (Date.now() > deadline) throw new Error(`child did not report ${key}`);
      if (child.exitCode !== null) throw new Error(`child exited with ${child.exitCode} before ${key}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  };
  return { child, waitFor };
}

async function waitUntil(predicate: () => boolean, timeoutMs: number, what: () => string) {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out: ${what()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
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
  for (const p of [seeder, ...others]) p.child.kill("SIGKILL");
  await Promise.all(
    [seeder, ...others].map((p) =>
      p.child.exitCode !== null || p.child.signalCode ? undefined : new Promise((r) => p.child.once("exit", r)),
    ),
  );
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
  for (const p of restarted) p.child.kill("SIGTERM");
  await Promise.all(restarted.map((p) => (p.child.exitCode !== null ? undefined : new Promise((r) => p.child.once("exit", r)))));

  // Every event arrived, under exactly one delivery id, with identical bytes whenever repeated.
  const seqs = new Map<number, string>();
  let duplicates = 0;
  for (const [id, d] of receiver.byDelivery) {
    expect(d.body).not.toBe("MISMATCH");
    expect(seqs.has(d.seq), `event ${d.seq} under two delivery ids`).toBe(false);
    seqs.set(d.seq, id);
    duplicates += d.times - 1;
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
  }, 90_000);

  it("PostgreSQL: two dispatching processes killed and two restarted; every event delivered, duplicates only with the same delivery id", async () => {
    const dir = mkdtempSync(join(tmpdir(), "webhooks-crash-"));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const url = await postgresDatabase(dir, "webhooks_crash", (c) => cleanups.push(c)); // cleanups run last first
    const result = await crashAndRecover({ DATA_DIR: dir, DATABASE_URL: url }, 2);
    console.log(
      `PostgreSQL: ${result.atCrash}/${EVENTS} delivered at the crash, ${result.duplicates} duplicate deliveries, ${result.requests} requests`,
    );
  }, 120_000);
});
