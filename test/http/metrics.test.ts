/**
 * Metrics and request ids (X-API-11, X-API-12), scraped over HTTP from running services after real
 * requests: the three services share this process, as under `npm start`.
 */
import { Writable } from "node:stream";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "../../support/free-port.ts";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ManualClock } from "../../server/clock.ts";
import { ConfigError } from "../../server/config.ts";
import { loadConfig } from "../../app/load-config.ts";
import { listen, type Listening } from "../../server/http/listen.ts";
import { isTrustedProxy, parseTrustProxy } from "../../server/http/trusted-proxy.ts";
import { createRepositoryService } from "../../handlers/repository/service.ts";
import { emailTarget, identityTarget, type EmailTarget, type IdentityTarget } from "../../conformance/harness/targets.ts";
import { signedInUser } from "../../conformance/harness/identity-fixtures.ts";
import { exchangeCode, tokenRequest } from "../../conformance/harness/oauth-flow.ts";
import { request } from "../../conformance/harness/http.ts";

/** One sample of an exposition: the value of `name` whose labels include `labels`; undefined when there is none. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split("\n")) {
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = Object.fromEntries([...(m[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((l) => [l[1], l[2]]));
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) return Number(m[3]);
  }
  return undefined;
}

async function scrape(url: string, token?: string): Promise<string> {
  const res = await fetch(`${url}/metrics`, token ? { headers: { authorization: `Bearer ${token}` } } : {});
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
  return res.text();
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const TOKEN = "metrics-token-0123456789abcdef";

// Two repository instances: one trusting no proxy with open metrics (the default), one behind a
// proxy at 127.0.0.1 (this test) with a metrics token. Their log lines are kept.
let logLines = "";
const dataDirs: string[] = [];
const running: Array<{ http: Listening; close(): Promise<void> }> = [];
async function repository(env: Record<string, string>): Promise<string> {
  const dataDir = mkdtempSync(join(tmpdir(), "metrics-"));
  dataDirs.push(dataDir);
  const sink = new Writable({ write: (chunk, _enc, done) => ((logLines += chunk.toString()), done()) });
  const service = await createRepositoryService(
    loadConfig({ DATA_DIR: dataDir, VALIDATE_RESPONSES: "true", ...env }),
    new ManualClock(),
    pino({ level: "info" }, sink),
  );
  const http = await listen(service.app, "127.0.0.1", 0);
  running.push({ http, close: service.close });
  return http.url;
}

let plain: string;
let proxied: string;
let identity: IdentityTarget;
let email: EmailTarget;
let closedPort: number;
beforeAll(async () => {
  closedPort = await freePort(); // nothing listens there: connections are refused
  plain = await repository({});
  proxied = await repository({ TRUST_PROXY: "127.0.0.1", METRICS_TOKEN: TOKEN });
  identity = await identityTarget();
  email = await emailTarget({
    env: {
      EMAIL_SMTP_URL: `smtp://127.0.0.1:${closedPort}`,
      EMAIL_SENDING_DOMAINS: "example.com",
      // Idle dispatchers wait this long (real time) before looking again: moving the clock past a
      // retry then leaves it overdue while the test looks.
      WEBHOOK_POLL_INTERVAL_MS: "60000",
    },
  });
});
afterAll(async () => {
  for (const r of running) {
    await r.http.close();
    await r.close();
  }
  await identity?.close();
  await email?.close();
  for (const d of dataDirs) rmSync(d, { recursive: true, force: true });
});

describe("metrics", () => {
  it("X-API-11 requests are counted and timed by operationId and status; unmatched paths share one label; process metrics too", async () => {
    for (let i = 0; i < 3; i++) expect((await fetch(`${plain}/health`)).status).toBe(200);
    expect((await request(plain, "POST", "/auth/login", { json: { email: "nobody@example.com" } })).status).toBe(400);
    for (const path of ["/nope", "/wp-admin/setup.php", "/health/x"]) expect((await fetch(`${plain}${path}`)).status).toBe(404);
    // Refused by the body parser before routing: still counted under its operation.
    expect((await request(plain, "POST", "/auth/login", { body: "{", headers: { "content-type": "application/json" } })).status).toBe(400);

    const text = await scrape(plain);
    expect(sample(text, "http_requests_total", { operation: "health", status: "200" })).toBe(3);
    expect(sample(text, "http_requests_total", { operation: "login", status: "400" })).toBe(2);
    expect(sample(text, "http_requests_total", { operation: "unknown", status: "404" })).toBe(3);
    expect(text).not.toMatch(/wp-admin|\/nope/);
    expect(sample(text, "http_request_duration_seconds_count", { operation: "health", status: "200" })).toBe(3);
    expect(sample(text, "http_request_duration_seconds_bucket", { operation: "health", status: "200", le: "+Inf" })).toBe(3);
    for (const le of ["0.005", "0.1", "1", "10"])
      expect(sample(text, "http_request_duration_seconds_bucket", { operation: "health", status: "200", le })).toBeDefined();
    expect(sample(text, "process_cpu_user_seconds_total")).toBeGreaterThan(0);
    expect(sample(text, "nodejs_heap_size_used_bytes")).toBeGreaterThan(0);
    // Each service has its own registry: the other repository instance has counted none of this.
    const other = await scrape(proxied, TOKEN);
    expect(sample(other, "http_requests_total", { operation: "health", status: "200" })).toBeUndefined();
    expect(other).not.toMatch(/^webhook_|^oauth_/m);
  });

  it("X-API-11 with METRICS_TOKEN set, /metrics answers only that Bearer token (401 otherwise, with a challenge)", async () => {
    const none = await request(proxied, "GET", "/metrics");
    expect(none.status).toBe(401);
    expect(none.headers.get("www-authenticate")).toBe('Bearer realm="metrics"');
    expect(none.body.code).toBe("unauthorized");
    const wrong = await request(proxied, "GET", "/metrics", { token: `${TOKEN}x` });
    expect(wrong.status).toBe(401);
    expect(wrong.body.code).toBe("invalid_token");
    expect(await scrape(proxied, TOKEN)).toContain("http_requests_total");
    // A bad token setting stops the service at start, without echoing the value.
    expect(() => loadConfig({ METRICS_TOKEN: "short secret" })).toThrow(ConfigError);
    expect(() => loadConfig({ METRICS_TOKEN: "short secret" })).not.toThrow(/short secret/);
  });

  it("X-API-11 identity counts token grants by grant type and outcome", async () => {
    const { app, flow } = await signedInUser(identity, "openid");
    const auth = { client_id: app.clientId, client_secret: app.clientSecret! };
    expect((await exchangeCode(identity.url, flow, app)).status).toBe(200);
    expect((await exchangeCode(identity.url, flow, app)).json.error).toBe("invalid_grant");
    expect((await tokenRequest(identity.url, { grant_type: "refresh_token", refresh_token: "nope", ...auth })).json.error).toBe(
      "invalid_grant",
    );
    expect((await tokenRequest(identity.url, { grant_type: "password", username: "u", password: "p", ...auth })).json.error).toBe(
      "unsupported_grant_type",
    );
    expect(
      (
        await tokenRequest(identity.url, {
          grant_type: "refresh_token",
          refresh_token: "x",
          client_id: app.clientId,
          client_secret: "wrong",
        })
      ).status,
    ).toBe(401);

    const text = await scrape(identity.url);
    const grants = (grant_type: string, outcome: string) => sample(text, "oauth_token_grants_total", { grant_type, outcome });
    expect(grants("authorization_code", "success")).toBe(1);
    expect(grants("authorization_code", "invalid_grant")).toBe(1);
    expect(grants("refresh_token", "invalid_grant")).toBe(1);
    expect(grants("refresh_token", "invalid_client")).toBe(1);
    expect(grants("other", "unsupported_grant_type")).toBe(1);
    expect(grants("refresh_token", "success")).toBe(0);
    expect(sample(text, "http_requests_total", { operation: "token", status: "200" })).toBe(1);
    expect(sample(text, "webhook_queue_depth")).toBe(0);
    expect(sample(text, "webhook_attempts_total", { outcome: "success" })).toBe(0);
  });

  it("X-API-11 email counts send and webhook attempts by outcome; queue gauges show what is pending and how overdue it is", async () => {
    const hook = await request(email.url, "POST", "/v1/webhooks", {
      token: email.apiKey,
      json: { url: `http://127.0.0.1:${closedPort}/hook`, events: ["email.delivered"] },
    });
    expect(hook.status).toBe(201);
    const sent = await request(email.url, "POST", "/v1/emails", {
      token: email.apiKey,
      json: { from: "shop@example.com", to: ["delivered@simulator.test", "someone@example.org"], subject: "Receipt", text: "Thanks" },
    });
    expect(sent.status).toBe(202);
    // The simulator's copy is delivered (one email.delivered event, whose delivery finds no
    // receiver); the relay's copy finds no relay and waits 60 s for its retry.
    await email.settle();
    // The background dispatcher may have taken the webhook delivery: wait until its attempt is recorded.
    for (let i = 0; i < 200; i++) {
      const list = await request(email.url, "GET", `/v1/webhooks/${hook.body.id}/deliveries`, { token: email.apiKey });
      if (list.body.items?.[0]?.attemptCount >= 1) break;
      await new Promise((r) => setTimeout(r, 25));
    }

    const before = await scrape(email.url);
    expect(sample(before, "email_send_attempts_total", { outcome: "delivered" })).toBe(1);
    expect(sample(before, "email_send_attempts_total", { outcome: "relay_failure" })).toBe(1);
    expect(sample(before, "webhook_attempts_total", { outcome: "connection_error" })).toBe(1);
    expect(sample(before, "webhook_attempts_total", { outcome: "success" })).toBe(0);
    expect(sample(before, "email_outbound_queue_depth")).toBe(1);
    expect(sample(before, "webhook_queue_depth")).toBe(1);
    // Both wait for scheduled retries: not overdue.
    expect(sample(before, "email_outbound_oldest_pending_age_seconds")).toBe(0);
    expect(sample(before, "webhook_oldest_pending_age_seconds")).toBe(0);

    // 100 s later, nothing has run them (the dispatchers are idle): the webhook retry (due after
    // 5 s) is 95 s overdue, the copy's (60 s) 40 s.
    email.clock!.advance(100_000);
    const after = await scrape(email.url);
    expect(sample(after, "webhook_oldest_pending_age_seconds")).toBeGreaterThanOrEqual(95);
    expect(sample(after, "webhook_oldest_pending_age_seconds")).toBeLessThan(97);
    expect(sample(after, "email_outbound_oldest_pending_age_seconds")).toBeGreaterThanOrEqual(40);
    expect(sample(after, "email_outbound_oldest_pending_age_seconds")).toBeLessThan(42);
    expect(sample(after, "email_outbound_queue_depth")).toBe(1);
  });
});

describe("request ids", () => {
  const idOf = async (url: string, sent?: string) =>
    (await fetch(`${url}/health`, sent === undefined ? {} : { headers: { "x-request-id": sent } })).headers.get("x-request-id")!;

  it("X-API-12 every response carries an X-Request-Id, and the request's log line the same id", async () => {
    const id = await idOf(plain);
    expect(id).toMatch(UUID);
    const line = logLines.split("\n").find((l) => l.includes(id));
    expect(JSON.parse(line!)).toMatchObject({ requestId: id, path: "/health", status: 200 });
    expect(await idOf(plain)).not.toBe(id);
  });

  it("X-API-12 an X-Request-Id from a trusted proxy is kept; from anyone else, or not 1-128 visible ASCII characters, a new one is made", async () => {
    expect(await idOf(proxied, "lb-7f3a.42")).toBe("lb-7f3a.42");
    expect(logLines).toContain('"requestId":"lb-7f3a.42"');
    const long = "a".repeat(128);
    expect(await idOf(proxied, long)).toBe(long);
    for (const bad of ["a".repeat(129), "two words", "tab\there", "é-accent"]) expect(await idOf(proxied, bad)).toMatch(UUID);
    // The default trusts no proxy: the client's id is ignored.
    expect(await idOf(plain, "lb-7f3a.42")).toMatch(UUID);
  });

  it("X-API-12 TRUST_PROXY: a hop count trusts the peer, a list trusts its addresses and ranges (IPv4-mapped IPv6 included), and a bad entry is refused", () => {
    expect(isTrustedProxy(parseTrustProxy(undefined), "127.0.0.1")).toBe(false);
    expect(isTrustedProxy(parseTrustProxy("0"), "127.0.0.1")).toBe(false);
    expect(isTrustedProxy(parseTrustProxy("1"), "203.0.113.9")).toBe(true);
    const list = parseTrustProxy("10.0.0.0/8, 2001:db8::1");
    expect(isTrustedProxy(list, "10.1.2.3")).toBe(true);
    expect(isTrustedProxy(list, "::ffff:10.1.2.3")).toBe(true);
    expect(isTrustedProxy(list, "2001:db8::1")).toBe(true);
    expect(isTrustedProxy(list, "11.0.0.1")).toBe(false);
    expect(isTrustedProxy(list, "2001:db8::2")).toBe(false);
    expect(isTrustedProxy(list, "not an address")).toBe(false);
    expect(() => loadConfig({ TRUST_PROXY: "10.0.0.0/8, proxy.internal" })).toThrow(/TRUST_PROXY.*proxy\.internal/);
  });
});
