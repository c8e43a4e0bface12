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
import { postgresDatabase } from "../support/postgres-database.ts";
import { describe, expect, it } from "vitest";
import { arrivalLog, crashChildren, crashReceiver, stopAll, waitUntil } from "../support/crash-children.ts";
import type { AddressInfo } from "node:net";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SMTPServer } from "smtp-server";
import { headerOf } from "./mail/helpers.ts";

const MESSAGES = 150;
const RECIPIENTS = 10; // each its own copy: its own SMTP transaction, Message-ID and events
const ENDPOINTS = ["a", "b"];
const COPIES = MESSAGES * RECIPIENTS;
const SEND_CONCURRENCY = 20;
const WEBHOOK_CONCURRENCY = 20;
const CHILD = join(import.meta.dirname, "crash-child.ts");
const { cleanups, start: startChild } = crashChildren(CHILD);

/**
 * The relay: records each message it reads (by Message-ID), answers 250. Before the crash it
 * answers 451 to every 50th RCPT (those copies are retried after the restart) and, while `gated`
 * (the messages are still being accepted), holds its answers so that thousands are pending. Once
 * opened it answers the first `promptly` copies it has read and holds the answers after them until
 * the crash: however fast the senders run against the webhook engine, the kill finds most copies
 * not yet read, and each held one is in flight (read, its outcome not committed).
 */
async function startRelay() {
  const log = arrivalLog<{ to: string }>();
  let rcpts = 0;
  let gated = true;
  let promptly = Number.POSITIVE_INFINITY;
  const held: Array<() => void> = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ["STARTTLS", "AUTH"],
    logger: false,
    disableReverseLookup: true,
    maxClients: 100,
    onRcptTo(_address, _session, cb) {
      if (!log.afterRestart() && ++rcpts % 50 === 0) return cb(Object.assign(new Error("4.3.0 Try again later"), { responseCode: 451 }));
      cb();
    },
    onData(stream, session, cb) {
      const chunks: Buffer[] = [];
      stream.on("data", (c: Buffer) => chunks.push(c));
      stream.on("end", () => {
        const to = session.envelope.rcptTo[0]!.address;
        log.record(headerOf(Buffer.concat(chunks), "Message-ID")!, to, () => ({ to }));
        if (gated || (!log.afterRestart() && log.byKey.size > promptly)) held.push(() => cb(null));
        else cb(null);
      });
    },
  });
  server.on("error", () => {}); // a client killed mid-transaction resets its connection: expected here
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  cleanups.push(() => new Promise<void>((r) => server.close(() => r())));
  return {
    url: `smtp://127.0.0.1:${(server.server.address() as AddressInfo).port}`,
    byMessageId: log.byKey,
    repeatsAfterRestart: log.repeatsAfterRestart,
    restarted: log.restarted,
    open: (answerPromptly: number) => {
      gated = false;
      promptly = answerPromptly;
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
  let badHeaders = 0;
  let held = 0;
  const { base, log } = await crashReceiver<{ endpoint: string; eventId: string; toEmail: string; type: string; acknowledged: number }>(
    cleanups,
    ({ req, res, body }, log) => {
      const event = JSON.parse(body);
      if (req.headers["webhook-id"] !== event.id) badHeaders++;
      const entry = log.record(`${req.url} ${event.id}`, body, () => ({
        endpoint: req.url ?? "",
        eventId: event.id,
        toEmail: event.data.toEmail,
        type: event.type,
        acknowledged: 0,
      }));
      if (!log.afterRestart()) return void held++; // never answered: the sender dies first
      setTimeout(() => {
        if (req.socket.destroyed) return;
        res.writeHead(200).end();
        entry.acknowledged++;
      }, 2);
    },
  );
  return {
    urls: ENDPOINTS.map((e) => `${base}/${e}`),
    byDelivery: log.byKey,
    held: () => held,
    acknowledged: () => [...log.byKey.values()].filter((e) => e.acknowledged > 0).length,
    repeatsAfterRestart: log.repeatsAfterRestart,
    badHeaders: () => badHeaders,
    restarted: log.restarted,
  };
}

type Counts = { messages: Record<string, number>; copies: Record<string, number>; deliveries: Record<string, number> };

/** A child and the store's counts it last reported (every 200 ms). */
function start(args: string[], env: Record<string, string>) {
  const child = startChild(args, env);
  return { ...child, counts: () => child.lines.findLast((l) => l.counts)?.counts as Counts | undefined };
}

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
  relay.open(COPIES / 3);
  // Kill while both queues are deep: a third of the copies read by the relay (and the ones in flight
  // after them, held), their events pending and as many deliveries in flight as the engine runs at once.
  await waitUntil(
    () =>
      relay.byMessageId.size >= COPIES / 3 &&
      receiver.held() >= WEBHOOK_CONCURRENCY * instances &&
      (seeder.counts()?.deliveries.pending ?? 0) >= 800,
    30_000,
    () =>
      `${relay.byMessageId.size} copies at the relay, ${receiver.held()} webhook deliveries in flight, ` +
      `${seeder.counts()?.deliveries.pending ?? 0} pending in the store before the crash`,
  );
  const atCrash = { relay: relay.byMessageId.size, counts: seeder.counts() };
  await stopAll([seeder, ...others], "SIGKILL");
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
  await stopAll(restarted, "SIGTERM");
  const elapsedMs = Date.now() - seededAt;

  // Every copy reached its final state (the store says so) and the relay has each of them.
  expect(restarted[0]!.counts()!.copies).toEqual({ Delivered: COPIES });
  // The message's own status follows its copies, however the copies' outcomes interleaved (X-EM-6).
  expect(restarted[0]!.counts()!.messages).toEqual({ Delivered: MESSAGES });
  expect(relay.byMessageId.size).toBe(COPIES);
  const relayDuplicates = [...relay.byMessageId.values()].filter((m) => m.arrivals > 1);
  for (const m of relay.byMessageId.values()) {
    expect(m.mismatch, `a copy to ${m.to} read again for another recipient`).toBe(false);
    expect(m.arrivals).toBeLessThanOrEqual(2);
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
    expect(d.mismatch, `${d.endpoint} got ${d.eventId} again with other bytes`).toBe(false);
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
  }, 240_000);

  it("PostgreSQL: two dispatching processes killed and two restarted; every copy delivered, every event acknowledged, repeats bounded and with the same ids", async () => {
    const dir = mkdtempSync(join(tmpdir(), "email-crash-"));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const url = await postgresDatabase(dir, "email_crash", (c) => cleanups.push(c)); // cleanups run last first
    report("PostgreSQL", await crashAndRecover({ DATA_DIR: dir, DATABASE_URL: url }, 2));
  }, 240_000);
});
