/**
 * The email send path on one fake clock: POST /v1/emails → outbound's dispatcher → the SMTP relay
 * (which defers the first try) → the retry → the outcome committed → email.delivered to a webhook
 * receiver (which fails the first try) → the webhook retry. Both dispatch loops and every batch of the
 * path run on the service's ManualClock, frozen from the start: the poll interval is a minute of that
 * clock, so nothing is retried unless the test moves it, and nothing here sleeps in real time (it
 * only waits for I/O). The clock moves only while both loops are asleep on it (two timers pending),
 * so each move is one step of the scenario. On SQLite and PostgreSQL.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { request } from "../../conformance/harness/http.ts";
import { testConfig } from "../../conformance/harness/targets.ts";
import { startReceiver, type Receiver } from "../../conformance/identity/webhooks-fixtures.ts";
import { createEmailService } from "../../handlers/email/service.ts";
import { ManualClock } from "../../server/clock.ts";
import { listen } from "../../server/http/listen.ts";
import { createLogger } from "../../server/logger.ts";
import { startCaptureServer, type CaptureServer } from "../email/mail/helpers.ts";
import { postgresDatabase } from "../support/postgres-database.ts";

const POLL_MS = 60_000;
const OUTBOUND_RETRY_MS = 120_000;
/** Email's webhook schedule with the jitter source fixed at 0.5 (no spread): 5 s after the first failure. */
const WEBHOOK_RETRY_MS = 5_000;

/** Waits, turn by turn of the event loop, until `done` holds: for I/O only, never for a timer. */
async function until(done: () => boolean | Promise<boolean>, what: string): Promise<void> {
  const deadline = performance.now() + 20_000;
  while (!(await done())) {
    if (performance.now() > deadline) throw new Error(`still waiting for ${what}`);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

describe.each(["sqlite", "postgres"] as const)("one send, its outcome and its webhook on one fake clock (%s)", (kind) => {
  const cleanups: Array<() => void | Promise<void>> = [];
  const clock = new ManualClock();
  clock.freeze();
  /** The clock's time at each RCPT the relay saw; the first is deferred (451), the next accepted. */
  const rcptAt: number[] = [];
  let relay: CaptureServer;
  let receiver: Receiver;
  let url: string;
  let apiKey: string;
  const call = (method: string, path: string, json?: unknown) => request(url, method, path, { token: apiKey, ...(json ? { json } : {}) });

  beforeAll(async () => {
    const dir = mkdtempSync(join(tmpdir(), "one-clock-"));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const database: Record<string, string> =
      kind === "postgres" ? { DATABASE_URL: await postgresDatabase(dir, "one_clock", (f) => cleanups.push(f)) } : {};
    relay = await startCaptureServer({
      rcpt: () => {
        rcptAt.push(clock.now().getTime());
        return rcptAt.length === 1 ? { code: 451, message: "4.3.0 Try again later" } : null;
      },
    });
    cleanups.push(() => relay.close());
    receiver = await startReceiver((_req, index) => (index === 0 ? { status: 503 } : { status: 204 }), "email-webhooks");
    cleanups.push(() => receiver.close());
    const config = testConfig({
      DATA_DIR: dir,
      ...database,
      EMAIL_PORT: "0",
      EMAIL_INBOUND_SMTP_PORT: "0",
      EMAIL_SMTP_URL: `smtp://127.0.0.1:${relay.port}`,
      EMAIL_SENDING_DOMAINS: "acme.test",
      WEBHOOK_REQUIRE_HTTPS: "false",
      WEBHOOK_ALLOW_PRIVATE_TARGETS: "127.0.0.1",
      WEBHOOK_POLL_INTERVAL_MS: String(POLL_MS),
    });
    const service = await createEmailService(config, clock, createLogger(config.LOG_LEVEL), {
      random: () => 0.5,
      retryDelaysMs: [OUTBOUND_RETRY_MS],
    });
    const http = await listen(service.app, "127.0.0.1", 0);
    cleanups.push(() => service.close());
    cleanups.push(() => http.close());
    url = http.url;
    apiKey = (await service.deps.apiKeys.create({ name: "one clock" })).key;
  }, 120_000);

  afterAll(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
  });

  /** Both dispatch loops asleep on the clock (their poll timers the only ones pending), twice in a row a turn apart. */
  async function asleep(): Promise<void> {
    let seen = 0;
    await until(() => {
      seen = clock.pendingTimers === 2 ? seen + 1 : 0;
      return seen >= 2;
    }, "both dispatch loops asleep on the clock");
  }

  it("X-EM-16 the relay's deferral is retried and delivered, and email.delivered is retried to the webhook, each only when the clock reaches it", async () => {
    const t0 = clock.now().getTime();
    const hook = await call("POST", "/v1/webhooks", { url: receiver.url, events: ["email.delivered"] });
    expect(hook.status).toBe(201);
    const sent = await call("POST", "/v1/emails", {
      from: "receipts@acme.test",
      to: ["ada@example.net"],
      subject: "Receipt",
      text: "Thanks.",
    });
    expect(sent.status).toBe(202);
    const copy = async () => (await call("GET", `/v1/emails/${sent.body.id}`)).body.recipients[0];

    // The send goes out at once (a wake, no timer), is deferred, and waits for the retry schedule.
    await until(async () => (await copy()).attempts === 1, "the deferral recorded");
    expect(await copy()).toMatchObject({ status: "Queued", attempts: 1 });
    expect(rcptAt).toEqual([t0]);
    await asleep();

    // Polls on the clock find nothing due before the retry's time.
    clock.advance(OUTBOUND_RETRY_MS - 1);
    await asleep();
    expect(rcptAt).toHaveLength(1);

    // The next poll finds the copy due: sent, accepted, committed, and its event goes to the webhook, which fails it.
    clock.advance(POLL_MS);
    const retriedAt = clock.now().getTime();
    await until(() => receiver.received.length === 1, "the first webhook attempt");
    expect(rcptAt).toEqual([t0, retriedAt]);
    expect(await copy()).toMatchObject({ status: "Delivered", attempts: 2 });
    const deliveries = async () => (await call("GET", `/v1/webhooks/${hook.body.id}/deliveries`)).body.items;
    await until(async () => (await deliveries())[0]?.attemptCount === 1, "the failed webhook attempt recorded");
    expect((await deliveries())[0]).toMatchObject({
      status: "pending",
      nextAttemptAt: new Date(retriedAt + WEBHOOK_RETRY_MS).toISOString(),
    });
    await asleep();

    // The webhook's retry is due at +5 s, and the engine's next poll on the clock sends it.
    clock.advance(POLL_MS);
    await until(() => receiver.received.length === 2, "the webhook retry");
    await until(async () => (await deliveries())[0]?.status === "succeeded", "the webhook retry recorded");
    const [delivery] = await deliveries();
    const detail = (await call("GET", `/v1/webhooks/${hook.body.id}/deliveries/${delivery.id}`)).body;
    expect(detail.attempts.map((a: { attemptedAt: string; statusCode: number }) => [a.attemptedAt, a.statusCode])).toEqual([
      [new Date(retriedAt).toISOString(), 503],
      [new Date(retriedAt + POLL_MS).toISOString(), 204],
    ]);
    expect(receiver.received[1]!.json.id).toBe(receiver.received[0]!.json.id);
    expect(receiver.received[0]!.json).toMatchObject({ type: "email.delivered", data: { id: sent.body.id, status: "Delivered" } });
  }, 60_000);
});
