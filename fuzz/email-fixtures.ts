/**
 * Fixtures for fuzzing the email service (scripts/schemathesis.sh email), made over HTTP only with
 * the deployment's first API key (from `npm run admin -- email create-api-key`), the way a client
 * would make them:
 *
 * - a test key (`em_test_…`) for sendEmail, so every schema-valid send goes through the simulator
 *   (X-EM-7) and reaches rendering, the outbox and a real SMTP transaction instead of stopping at
 *   422 `no_transport`, and for the reads of messages, which see only the test key's (X-EM-27);
 *   and a spare key for revokeApiKey (its first accepted case revokes it, and the main key must
 *   survive);
 * - a message sent with the test key to `delivered@simulator.test` with open and click tracking,
 *   waited for until `Delivered`, and its rendered copy: the message id, the recipient, an open
 *   and a click token;
 * - suppressions from real reports: a hard bounce (`bounced+…@simulator.test`) and a complaint
 *   (`complained+…@simulator.test`, the simulator's ARF report over SMTP), and a manual one for
 *   deleteSuppression to lift;
 * - a webhook with a test delivery, waited for until it has ended (its one attempt fails: the
 *   host is under `.invalid`, which never resolves, so nothing leaves the machine) so that a
 *   redelivery is allowed, and a second webhook for deleteWebhook.
 *
 *   node --import tsx fuzz/email-fixtures.ts <base url>   (the first API key on stdin)
 *
 * Prints `export NAME='value'` lines for the shell; every value is a URL-safe token, an id or an
 * address, so single quotes are enough.
 */
import { randomBytes } from "node:crypto";
import { setTimeout as delay } from "node:timers/promises";

const [base] = process.argv.slice(2);
if (!base) {
  console.error("usage: email-fixtures.ts <base url>  (the first API key on stdin)");
  process.exit(2);
}
const apiKey = (
  await new Promise<string>((resolve) => {
    let text = "";
    process.stdin.setEncoding("utf8");
    process.stdin.on("data", (chunk) => (text += chunk));
    process.stdin.on("end", () => resolve(text));
  })
).trim();

function fail(message: string): never {
  console.error(`email-fixtures: ${message}`);
  process.exit(1);
}

/** A JSON API call that must answer `expected`, with the first key unless `key` is another. */
async function api(method: string, path: string, json: unknown, expected: number, key = apiKey) {
  const headers: Record<string, string> = { authorization: `Bearer ${key}` };
  if (json !== undefined) headers["content-type"] = "application/json";
  const res = await fetch(`${base}${path}`, { method, headers, body: json === undefined ? undefined : JSON.stringify(json) });
  const text = await res.text();
  if (res.status !== expected) fail(`${method} ${path}: ${res.status} ${text.slice(0, 300)}`);
  return text ? JSON.parse(text) : undefined;
}

/** Polls `path` until `done` holds for its body (the simulator answers in well under a second; reports after EMAIL_SIMULATOR_REPORT_DELAY_MS). */
async function until(path: string, done: (body: any) => boolean, what: string, key = apiKey) {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const body = await api("GET", path, undefined, 200, key);
    if (done(body)) return body;
    if (Date.now() > deadline) fail(`${what}: still ${JSON.stringify(body).slice(0, 300)}`);
    await delay(100);
  }
}

const tag = randomBytes(4).toString("hex");
const from = "fuzz@shop.example.com";
const send = (to: string, extra: Record<string, unknown> = {}, key = apiKey) =>
  api("POST", "/v1/emails", { from, to: [to], subject: `Fuzz fixture ${tag}`, text: "Fixture message.", ...extra }, 202, key);

const testKey = await api("POST", "/v1/api-keys", { name: "fuzz test sender", mode: "test" }, 201);
const doomedKey = await api("POST", "/v1/api-keys", { name: "fuzz doomed key" }, 201);

// A tracked message, delivered by the simulator, and the tracking URLs of its copy: sent with the
// test key, which the fuzzer reads messages with (a key reads only its own mode's, X-EM-27).
const recipient = "delivered@simulator.test";
const tracked = await send(
  recipient,
  {
    html: `<p>Fuzz fixture. <a href="https://shop.example.com/orders/${tag}">Your order</a></p>`,
    tags: ["fuzz"],
    metadata: { fixture: "tracked" },
    tracking: { opens: true, clicks: true },
  },
  testKey.key,
);
await until(`/v1/emails/${tracked.id}`, (e) => e.status === "Delivered", "the tracked message was not delivered", testKey.key);
const rendered = await api(
  "GET",
  `/v1/emails/${tracked.id}/recipients/${encodeURIComponent(recipient)}/content`,
  undefined,
  200,
  testKey.key,
);
const lastSegment = (url: string | undefined) =>
  (url ? new URL(url).pathname.split("/").pop() : undefined) ?? fail("the rendered copy has no tracking URL");
const openToken = lastSegment(rendered.openTrackingUrl);
const clickToken = lastSegment(rendered.links?.[0]?.trackingUrl);

// Suppressions made by real outcomes: a hard bounce at RCPT and a complaint (ARF report).
const bouncedAddress = `bounced+${tag}@simulator.test`;
const complainedAddress = `complained+${tag}@simulator.test`;
const bounced = await send(bouncedAddress);
const complained = await send(complainedAddress);
await until(`/v1/emails/${bounced.id}`, (e) => e.status === "Bounced", "the bounce did not arrive");
await until(`/v1/emails/${complained.id}`, (e) => e.status === "Complained", "the complaint did not arrive");
await api("GET", `/v1/suppressions/${encodeURIComponent(bouncedAddress)}`, undefined, 200);
await api("GET", `/v1/suppressions/${encodeURIComponent(complainedAddress)}`, undefined, 200);
const manualAddress = `fuzz-manual-${tag}@shop.example.com`;
await api("POST", "/v1/suppressions", { email: manualAddress }, 201);

// A webhook with one ended test delivery, and one for the deletes.
const webhook = await api(
  "POST",
  "/v1/webhooks",
  { url: `https://hooks.fuzz.invalid/email-events/${tag}`, events: ["email.bounced", "email.complained"], description: "fuzz fixture" },
  201,
);
const test = await api("POST", `/v1/webhooks/${webhook.id}/test`, { type: "email.bounced" }, 202);
await until(`/v1/webhooks/${webhook.id}/deliveries/${test.id}`, (d) => d.status !== "pending", "the test delivery did not end");
const doomedWebhook = await api("POST", "/v1/webhooks", { url: `https://hooks.fuzz.invalid/doomed/${tag}`, events: ["email.opened"] }, 201);

const out: Record<string, string> = {
  FUZZ_TEST_KEY: testKey.key,
  FUZZ_DOOMED_KEY_ID: doomedKey.id,
  FUZZ_EMAIL_ID: tracked.id,
  FUZZ_RECIPIENT: recipient,
  FUZZ_OPEN_TOKEN: openToken,
  FUZZ_CLICK_TOKEN: clickToken,
  FUZZ_BOUNCED_ADDRESS: bouncedAddress,
  FUZZ_COMPLAINED_ADDRESS: complainedAddress,
  FUZZ_MANUAL_ADDRESS: manualAddress,
  FUZZ_WEBHOOK_ID: webhook.id,
  FUZZ_DELIVERY_ID: test.id,
  FUZZ_DOOMED_WEBHOOK_ID: doomedWebhook.id,
};
for (const [name, value] of Object.entries(out)) {
  if (!/^[A-Za-z0-9._~:/@+-]*$/.test(value)) fail(`${name} has an unexpected character`);
  console.log(`export ${name}='${value}'`);
}
