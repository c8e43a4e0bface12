/**
 * One email service process for the email crash test (test/email/crash.test.ts). Started as a real
 * child process and killed with SIGKILL by the test.
 *
 *   node --import tsx test/email/crash-child.ts seed <receiverUrls> <messages> <recipients>
 *       a webhook for email.delivered and email.bounced at each of the comma-separated
 *       <receiverUrls>, then <messages> sends
 *       through POST /v1/emails, each to <recipients> addresses at example.net (the relay)
 *   node --import tsx test/email/crash-child.ts run
 *       just dispatch copies and webhook deliveries
 *
 * Configuration comes from the environment (DATA_DIR or DATABASE_URL, EMAIL_SMTP_URL, WEBHOOK_*).
 * CRASH_CLOCK_OFFSET_MS moves the service clock ahead of real time: a restart "later", once the
 * leases of the killed process ran out, without waiting for them in real time.
 * Prints one JSON line per milestone on stdout, and every 200 ms the store's counts.
 */
import { type Clock, systemClock } from "../../server/clock.ts";
import { loadConfig } from "../../app/load-config.ts";
import { createLogger } from "../../server/logger.ts";
import { listen } from "../../server/http/listen.ts";
import { createEmailService } from "../../handlers/email/service.ts";

const [mode, receiverUrl, messages, recipients] = process.argv.slice(2);
const offsetMs = Number(process.env.CRASH_CLOCK_OFFSET_MS ?? 0);
const clock: Clock = { ...systemClock, now: () => new Date(Date.now() + offsetMs) };
const config = loadConfig(process.env);
const service = await createEmailService(config, clock, createLogger(config.LOG_LEVEL));
const say = (o: object) => process.stdout.write(`${JSON.stringify(o)}\n`);
process.on("SIGTERM", () => void service.close().then(() => process.exit(0)));

/** What the store says: messages, copies and webhook deliveries by status. */
async function counts() {
  const by = async (table: string) =>
    Object.fromEntries(
      ((await service.db(table).select("status").count({ n: "*" }).groupBy("status")) as Array<{ status: string; n: number | string }>).map(
        (r) => [r.status, Number(r.n)],
      ),
    );
  return { messages: await by("emails"), copies: await by("email_recipients"), deliveries: await by("webhook_deliveries") };
}
setInterval(
  () =>
    void counts().then(
      (c) => say({ counts: c }),
      () => {},
    ),
  200,
).unref();

if (mode === "seed") {
  const http = await listen(service.app, "127.0.0.1", 0);
  const { key } = await service.deps.apiKeys.create({ name: "crash test" });
  const post = (path: string, json: unknown) =>
    fetch(`${http.url}${path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify(json),
    });
  for (const url of receiverUrl!.split(",")) {
    const hook = await post("/v1/webhooks", { url, events: ["email.delivered", "email.bounced"] });
    if (hook.status !== 201) throw new Error(`webhook: ${hook.status} ${await hook.text()}`);
  }
  say({ webhook: true });
  const total = Number(messages);
  const per = Number(recipients);
  // Through the API, a few requests at a time, as clients would send them.
  let next = 0;
  const worker = async () => {
    for (let seq = next++; seq < total; seq = next++) {
      const to = Array.from({ length: per }, (_, r) => `u${seq}-${r}@example.net`);
      const send = () =>
        post("/v1/emails", {
          from: "receipts@acme.test",
          to,
          subject: `Receipt ${seq}`,
          text: `Order ${seq}`,
          metadata: { seq: String(seq) },
        });
      let res = await send();
      // The key's sending rate is limited: on a fast machine the seeding outruns it, and a client
      // waits as the 429 says and sends the same message again.
      while (res.status === 429) {
        await res.arrayBuffer();
        await new Promise((r) => setTimeout(r, Number(res.headers.get("retry-after") ?? "1") * 1000));
        res = await send();
      }
      if (res.status !== 202) throw new Error(`send ${seq}: ${res.status} ${await res.text()}`);
      await res.arrayBuffer();
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
  say({ seeded: total * per });
}
say({ ready: true, pid: process.pid });
