/**
 * Crash safety of email: thousands of copies queued in the outbox and webhook deliveries pending,
 * the service process is killed with SIGKILL mid-flight and restarted on the same storage. The
 * relay (an smtp-server in this process) records every Message-ID it reads; the webhook receiver
 * (two endpoints) records every event id. The messages go in through POST /v1/emails.
 *
 * The rule (spec, Emails: "at least once to the relay, never zero times"; X-EM-15 for webhooks):
 * - every copy reaches its final state and the relay reads it at least once;
 * - the relay reads a copy twice only when the crash fell between its reading the message and the
 *   COMMIT of the outcome: only copies in flight at the crash, so at most EMAIL_SEND_CONCURRENCY per
 *   killed process, each at most twice, always with the same Message-ID; a copy first read after
 *   the restart is never read again;
 * - every event is acknowledged (2xx) by every endpoint at least once; each copy has exactly one
 *   `email.delivered` event id, the same at every endpoint; a repeat carries the same id and bytes
 *   and comes only from an attempt in flight at the crash (at most WEBHOOK_CONCURRENCY per process).
 *
 * The restarted process runs its clock CRASH_CLOCK_OFFSET_MS ahead: a restart after the killed
 * process's leases ran out (120 s for copies, 121 s for deliveries), without waiting in real time.
 * On SQLite with one process, and on PostgreSQL with two at a time (FOR UPDATE SKIP LOCKED); the
 * two-process run is what found the deadlock between two instances' group commits.
 * PostgreSQL: CONFORMANCE_DATABASE_URL, or a throwaway cluster from scripts/postgres.sh.
 * CRASH_LOG_LEVEL=warn shows the service's own log.
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
import { SMTPServer } from "smtp-server";
import { headerOf } from "./email-mail-helpers.ts";

const MESSAGES = 150;
const RECIPIENTS = 10; // each its own copy: its own SMTP transaction, Message-ID and events
const ENDPOINTS = ["a", "b"];
const COPIES = MESSAGES * RECIPIENTS;
const SEND_CONCURRENCY = 20;
const WEBHOOK_CONCURRENCY = 20;
const CHILD = join(import.meta.dirname, "email-crash-child.ts");
const { cleanups, start: startChild } = crashChildren(CHILD);

/**
 * The relay: records each message it reads (by Message-ID), answers 250. Before the crash it
 * answers 451 to every 50th RCPT (those copies are retried after the restart) and, while `gated`
 * (the messages are still being accepted), holds its answers so that thousands are pending.
 */
async function startRelay() {
  const byMessageId = new Map<string, { to: string; times: number; phase: number }>();
  let phase = 0;
  let rcpts = 0;
  let repeatsAfterRestart = 0;
  let gated = true;
  const held: Array<() => void> = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ["STARTTLS", "AUTH"],
    logger: false,
    disableReverseLookup: true,
    maxClients: 100,
    onRcptTo(_address, _session, cb) {
      if (phase === 0 && ++rcpts % 50 === 0) return cb(Object.assign(new Error("4.3.0 Try again later"), { responseCode: 451 }));
      cb();
    },
    onData(stream, session, cb) {
      const chunks: Buffer[] = [];
      stream.on("data", (c: Buffer) => chunks.push(c));
      stream.on("end", () => {
        const id = headerOf(Buffer.concat(chunks), "Message-ID")!;
        const to = session.envelope.rcptTo[0]!.address;
        const seen = byMessageId.get(id);
        if (seen) {
          seen.times++;
          if (seen.phase === 1) repeatsAfterRestart++;
          if (seen.to !== to) seen.to = "MISMATCH";
        } else byMessageId.set(id, { to, times: 1, phase });
        if (gated) held.push(() => cb(null));
        else cb(null);
      });
    },
  });
  server.on("error", () => {}); // a client killed mid-transaction resets its connection: expected here
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  cleanups.push(() => new Promise<void>((r) => server.close(() => r())));
  return {
    url: `smtp://127.0.0.1:${(server.server.address() as AddressInfo).port}`,
    byMessageId,
    repeatsAfterRestart: () => repeatsAfterRestart,
    restarted: () => void (phase = 1),
    open: () => {
      gated = false;
      for (const a of held.splice(0)) a();
    },
  };
}

/**
 * The webhook receiver, behind two endpoints (each event goes to both, X-EM-15): records
 * arrivals and 2xx answers per endpoint and event id. Before the crash it holds every answer (the
 * 60 s time-out is not reached), so deliveries pile up and the ones in flight die with the process.
 */
async function startReceiver() {
  const byDelivery = new Map<
    string,
    {
      endpoint: string;
      eventId: string;
      toEmail: string;
      type: string;
      body: string;
      arrivals: number;
      acknowledged: number;
      phase: number;
    }
  >();
  let phase = 0;
  let repeatsAfterRestart = 0;
  let badHeaders = 0;
  let held = 0;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      const event = JSON.parse(body);
      if (req.headers["webhook-id"] !== event.id) badHeaders++;
      const key = `${req.url} ${event.id}`;
      let seen = byDelivery.get(key);
      if (seen) {
        seen.arrivals++;
        if (seen.phase === 1) repeatsAfterRestart++;
        if (seen.body !== body) seen.body = "MISMATCH";
      } else {
        seen = {
          endpoint: req.url ?? "",
          eventId: event.id,
          toEmail: event.data.toEmail,
          type: event.type,
          body,
          arrivals: 1,
          acknowledged: 0,
          phase,
        };
        byDelivery.set(key, seen);
      }
      if (phase === 0) return void held++; // never answered: the sender dies first
      const entry = seen;
      setTimeout(() => {
        if (req.socket.destroyed) return;
        res.writeHead(200).end();
        entry.acknowledged++;
      }, 2);
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  cleanups.push(() => {
    server.closeAllConnections();
    return new Promise<void>((r) => server.close(() => r()));
  });
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    urls: ENDPOINTS.map((e) => `${base}/${e}`),
    byDelivery,
    held: () => held,
    acknowledged: () => [...byDelivery.values()].filter((e) => e.acknowledged > 0).length,
    repeatsAfterRestart: () => repeatsAfterRestart,
    badHeaders: () => badHeaders,
    restarted: () => void (phase = 1),
  };
}

type Counts = { messages: Record<string, number>; copies: Record<string, number>; deliveries: Record<string, number> };

function start(args: string[], env: Record<string, string>) {
  const child = startChild(args, env);
  const lines: any[] = [];
  let counts: Counts | undefined;
  createInterface({ input: child.stdout! }).on("line", (l) => {
    const o = JSON.parse(l);
    if (o.counts) counts = o.counts;
    else if ("level" in o)
      process.stderr.write(`${l}\n`); // the service's log (CRASH_LOG_LEVEL)
    else lines.push(o);
  });
  const waitFor = async (key: string, timeoutMs = 30_000) => {
    const deadline = Date.now() + timeoutMs;
    while (!lines.some((l) => key in l)) {
      if (Date.now() > deadline) throw new Error(`child did not report ${key}`);
      if (child.exitCode !== null) throw new Error(`child exited with ${child.exitCode} before ${key}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  };
  return { child, waitFor, counts: () => counts };
}

async function waitUntil(predicate: () => boolean, timeoutMs: number, what: () => string) {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out: ${what()}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const killAll = async (ps: Array<ReturnType<typeof start>>, signal: NodeJS.Signals) => {
  for (const p of ps) p.child.kill(signal);
  await Promise.all(
    ps.map((p) => (p.child.exitCode !== null || p.child.signalCode ? undefined : new Promise((r) => p.child.once("exit", r)))),
  );
};

async function crashAndRecover(storageEnv: Record<string, string>, instances: number) {
  const relay = await startRelay();
  const receiver = await startReceiver();
  const env = {
    ...storageEnv,
    LOG_LEVEL: process.env.CRASH_LOG_LEVEL ?? "silent",
    EMAIL_SMTP_URL: relay.url,
    EMAIL_SENDING_DOMAINS: "acme.test",
    EMAIL_INBOUND_SMTP_PORT: "0",
    EMAIL_SEND_CONCURRENCY: String(SEND_CONCURRENCY),
    EMAIL_WEBHOOK_TIMEOUT_MS: "60000", // held answers never time out before the kill: repeats come from the crash alone
    WEBHOOK_ALLOW_PRIVATE_TARGETS: "127.0.0.1",
    WEBHOOK_REQUIRE_HTTPS: "false",
    WEBHOOK_POLL_INTERVAL_MS: "50",
    WEBHOOK_CONCURRENCY: String(WEBHOOK_CONCURRENCY),
  };
  const seeder = start(["seed", receiver.urls.join(","), String(MESSAGES), String(RECIPIENTS)], env);
  await seeder.waitFor("webhook");
  const others = Array.from({ length: instances - 1 }, () => start(["run"], env));
  await seeder.waitFor("seeded", 60_000);
  const seededAt = Date.now();
  relay.open();
  // Kill while both queues are deep: a third of the copies read by the relay, their events pending
  // and as many deliveries in flight as the engine runs at once.
  await waitUntil(
    () => relay.byMessageId.size >= COPIES / 3 && receiver.held() >= WEBHOOK_CONCURRENCY * instances,
    30_000,
    () => `${relay.byMessageId.size} copies at the relay, ${receiver.held()} webhook deliveries in flight before the crash`,
  );
  const atCrash = { relay: relay.byMessageId.size, counts: seeder.counts() };
  await killAll([seeder, ...others], "SIGKILL");
  const pendingCopies = COPIES - (atCrash.counts?.copies.Delivered ?? 0);
  const pendingDeliveries = atCrash.counts?.deliveries.pending ?? 0;
  // Thousands pending at the kill: two thirds of the copies not yet at the relay, and the webhook
  // deliveries of the ones delivered so far (the store's count, at most 200 ms old).
  expect(COPIES - atCrash.relay).toBeGreaterThanOrEqual(900);
  expect(pendingDeliveries).toBeGreaterThanOrEqual(800);

  relay.restarted();
  receiver.restarted();
  const restartEnv = { ...env, CRASH_CLOCK_OFFSET_MS: "130000" };
  const restarted = Array.from({ length: instances }, () => start(["run"], restartEnv));
  await Promise.all(restarted.map((p) => p.waitFor("ready")));
  const finished = () => {
    const c = restarted[0]!.counts();
    return (
      c !== undefined &&
      c.copies.Delivered === COPIES &&
      (c.deliveries.succeeded ?? 0) === COPIES * ENDPOINTS.length &&
      Object.keys(c.deliveries).length === 1
    );
  };
  await waitUntil(
    finished,
    45_000,
    () =>
      `after the restart: ${JSON.stringify(restarted[0]!.counts())}, ${relay.byMessageId.size} copies at the relay, ${receiver.acknowledged()} events acknowledged`,
  );
  await killAll(restarted, "SIGTERM");
  const elapsedMs = Date.now() - seededAt;

  // Every copy reached its final state (the store says so) and the relay has each of them.
  expect(restarted[0]!.counts()!.copies).toEqual({ Delivered: COPIES });
  // The message's own status follows its copies, however the copies' outcomes interleaved (X-EM-6).
  expect(restarted[0]!.counts()!.messages).toEqual({ Delivered: MESSAGES });
  expect(relay.byMessageId.size).toBe(COPIES);
  const relayDuplicates = [...relay.byMessageId.values()].filter((m) => m.times > 1);
  for (const m of relay.byMessageId.values()) {
    expect(m.to).not.toBe("MISMATCH");
    expect(m.times).toBeLessThanOrEqual(2);
  }
  expect(new Set([...relay.byMessageId.values()].map((m) => m.to)).size).toBe(COPIES);
  expect(relayDuplicates.length).toBeLessThanOrEqual(SEND_CONCURRENCY * instances);
  expect(relay.repeatsAfterRestart()).toBe(0);

  // Every event acknowledged at least once by every endpoint, one delivered event id per copy (the
  // same at every endpoint), repeats with the same id and bytes and only for attempts cut by the crash.
  expect(receiver.badHeaders()).toBe(0);
  const eventsByCopy = new Map<string, Set<string>>();
  for (const d of receiver.byDelivery.values()) {
    expect(d.type).toBe("email.delivered");
    expect(d.body).not.toBe("MISMATCH");
    expect(d.acknowledged, `${d.endpoint} never acknowledged ${d.eventId}`).toBeGreaterThan(0);
    eventsByCopy.set(d.toEmail, (eventsByCopy.get(d.toEmail) ?? new Set()).add(d.eventId));
  }
  expect(receiver.byDelivery.size).toBe(COPIES * ENDPOINTS.length);
  expect(eventsByCopy.size).toBe(COPIES);
  expect([...eventsByCopy.values()].every((ids) => ids.size === 1)).toBe(true);
  const webhookDuplicates = [...receiver.byDelivery.values()].filter((e) => e.arrivals > 1);
  expect(webhookDuplicates.length).toBeLessThanOrEqual(WEBHOOK_CONCURRENCY * instances);
  expect(receiver.repeatsAfterRestart()).toBe(0);
  return {
    atCrash,
    pendingCopies,
    pendingDeliveries,
    relayDuplicates: relayDuplicates.length,
    webhookDuplicates: webhookDuplicates.length,
    elapsedMs,
  };
}

const report = (kind: string, r: Awaited<ReturnType<typeof crashAndRecover>>) =>
  console.log(
    `${kind}: killed with ${r.pendingCopies} of ${COPIES} copies not yet Delivered (${COPIES - r.atCrash.relay} not yet at the relay) and ${r.pendingDeliveries} webhook deliveries pending; ` +
      `${r.relayDuplicates} copies received twice, ${r.webhookDuplicates} webhook deliveries received twice; ${r.elapsedMs} ms from the relay's opening to the end`,
  );

describe("email survives SIGKILL", () => {
  it("SQLite: one process killed mid-flight and restarted; every copy delivered, every event acknowledged, repeats bounded and with the same ids", async () => {
    const dir = mkdtempSync(join(tmpdir(), "email-crash-"));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    report("SQLite", await crashAndRecover({ DATA_DIR: dir }, 1));
  }, 90_000);

  it("PostgreSQL: two dispatching processes killed and two restarted; every copy delivered, every event acknowledged, repeats bounded and with the same ids", async () => {
    const dir = mkdtempSync(join(tmpdir(), "email-crash-"));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const url = await postgresDatabase(dir, "email_crash", (c) => cleanups.push(c)); // cleanups run last first
    report("PostgreSQL", await crashAndRecover({ DATA_DIR: dir, DATABASE_URL: url }, 2));
  }, 120_000);
});
