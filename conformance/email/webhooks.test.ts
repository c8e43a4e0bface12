/**
 * EM-1, EM-4..EM-7 and the webhook decisions (X-EM-9..12): registration, what a receiver gets
 * (verified with the independent `standardwebhooks` library and a plain HMAC of the raw bytes),
 * the retry schedule observed on the service's clock, and one event id across retries.
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import { Webhook } from "standardwebhooks";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { components } from "../../generated/sdk/types/email.ts";
import { emailWorld, type EmailWorld } from "../harness/worlds.ts";
import { request } from "../harness/http.ts";
import type { EmailTarget } from "../harness/targets.ts";
import { startReceiver, waitUntil, type Answer, type Receiver, type Received } from "../identity/webhooks-fixtures.ts";
import { NEEDS, skipOnDeployment, skipRunningTest } from "../harness/skip.ts";

let target: EmailTarget;
/** The typed client, with the full-access API key. */
let api: EmailWorld["api"];
let n = 0;
const sim = (local: string) => `${local}+w${Date.now().toString(36)}${++n}@simulator.test`;
/** A webhook create through the typed client: which hosts are refused is the deployment's rule (X-EM-9), not the contract's. */
const createWebhook = (body: components["schemas"]["WebhookCreate"]) => api().POST("/v1/webhooks", { body });
const receivers: Receiver[] = [];
const receiver = async (answer?: (r: Received, i: number) => Answer) => {
  if (!target.service) skipRunningTest(NEEDS.webhookReceivers);
  const r = await startReceiver(answer, "email-webhooks");
  receivers.push(r);
  return r;
};
const hooks: string[] = [];
/** A deployment that registered an internal address allows them (WEBHOOK_ALLOW_PRIVATE_TARGETS): remove it, and skip. */
async function privateTargetsAllowed(webhookId: string): Promise<never> {
  await api().DELETE("/v1/webhooks/{webhookId}", { params: { path: { webhookId } } });
  return skipRunningTest(NEEDS.privateWebhookTargets);
}
async function register(url: string, events: components["schemas"]["WebhookEventType"][]) {
  const { data, response } = await api().POST("/v1/webhooks", { body: { url, events } });
  expect(response.status).toBe(201);
  hooks.push(data!.id);
  return data!;
}
/** Sends one message and runs the dispatchers until its webhook deliveries went out. */
async function sendAndSettle(to: string) {
  const { data, response } = await api().POST("/v1/emails", {
    body: { from: "receipts@shop.example.com", to: [to], subject: "Receipt", text: "Thanks.", metadata: { orderId: "1042" } },
  });
  expect(response.status).toBe(202);
  await target.settle();
  return data!.id;
}
/** X-Service-Signature, recomputed from the raw bytes as the seed tells a receiver to. */
const serviceSignatureValid = (r: Received, secret: string) => {
  const expected = Buffer.from(createHmac("sha256", secret).update(r.raw).digest("hex"));
  const got = Buffer.from(String(r.headers["x-service-signature"]));
  return got.length === expected.length && timingSafeEqual(got, expected);
};

beforeAll(async () => {
  ({ target, api } = await emailWorld());
});
afterEach(async () => {
  for (const webhookId of hooks.splice(0)) await api().DELETE("/v1/webhooks/{webhookId}", { params: { path: { webhookId } } });
  for (const r of receivers.splice(0)) await r.close();
});
afterAll(async () => target?.close());

describe("registration", () => {
  it("EM-1 POST /v1/webhooks with url and events, authorised by the API key, registers a webhook and returns its secret once", async () => {
    const r = await receiver();
    const created = await createWebhook({ url: r.url, events: ["email.delivered", "email.bounced"] });
    expect(created.response.status).toBe(201);
    hooks.push(created.data!.id);
    expect(created.data).toMatchObject({ url: r.url, events: ["email.delivered", "email.bounced"], isActive: true });
    expect(created.data!.secret).toMatch(/^whsec_/);
    const read = await api().GET("/v1/webhooks/{webhookId}", { params: { path: { webhookId: created.data!.id } } });
    expect(read.response.status).toBe(200);
    expect((read.data as { secret?: string }).secret).toBeUndefined();
    // Without the API key: raw, on purpose.
    expect((await request(target.url, "POST", "/v1/webhooks", { json: { url: r.url, events: ["email.delivered"] } })).status).toBe(401);
  });

  it("EM-1 the webhook list is newest first, without secrets", async () => {
    const r = await receiver();
    const older = await register(r.url, ["email.delivered"]);
    const newer = await register(r.url, ["email.bounced"]);
    const list = await api().GET("/v1/webhooks", { params: { query: { page: 1, pageSize: 100 } } });
    expect(list.response.status).toBe(200);
    const items: Array<{ id: string; secret?: string }> = list.data!.items;
    const ids = items.map((w) => w.id);
    expect(ids.indexOf(newer.id)).toBeGreaterThanOrEqual(0);
    expect(ids.indexOf(newer.id)).toBeLessThan(ids.indexOf(older.id));
    expect(items.every((w) => w.secret === undefined)).toBe(true);
  });

  it("X-EM-9 a webhook URL resolving to an internal address is 400 insecure_url", async () => {
    const r = await createWebhook({ url: "https://10.0.0.7/hook", events: ["email.delivered"] });
    if (r.response.status === 201 && !target.service) await privateTargetsAllowed(r.data!.id);
    expect(r.response.status).toBe(400);
    expect(r.error!.code).toBe("insecure_url");
  });

  it("X-EM-9 IPv6 forms of an internal IPv4 address are insecure_url too (the guard identity uses)", async () => {
    for (const url of [
      // https: a deployment refuses plain http first (WEBHOOK_REQUIRE_HTTPS), for another reason.
      "https://[::127.0.0.2]/hook",
      "https://[::ffff:169.254.169.254]/hook",
      "https://[64:ff9b::a9fe:a9fe]/hook",
      "https://[2002:a00:7::1]/hook",
      "https://0xa9fea9fe/hook",
    ]) {
      const r = await createWebhook({ url, events: ["email.delivered"] });
      if (r.response.status === 201 && !target.service) await privateTargetsAllowed(r.data!.id);
      expect(r.response.status, url).toBe(400);
      expect(r.error!.code, url).toBe("insecure_url");
    }
  });
});

describe("deliveries", () => {
  it("EM-5 deliveries carry X-Service-Signature, the HMAC-SHA256 of the raw body keyed with the webhook's secret, which a receiver recomputes and compares in constant time", async () => {
    const r = await receiver();
    const hook = await register(r.url, ["email.delivered"]);
    await sendAndSettle(sim("delivered"));
    await r.waitFor(1);
    const got = r.received[0]!;
    expect(String(got.headers["x-service-signature"])).toMatch(/^[0-9a-f]{64}$/);
    expect(serviceSignatureValid(got, hook.secret)).toBe(true);
    // One changed byte of the body, or another secret, and the check fails.
    expect(serviceSignatureValid({ ...got, raw: Buffer.concat([got.raw, Buffer.from(" ")]) }, hook.secret)).toBe(false);
    expect(serviceSignatureValid(got, hook.secret + "x")).toBe(false);
  });

  it("EM-7 an event may arrive more than once: a retried delivery carries the same event id (body id and webhook-id) and the same bytes", async (ctx) => {
    if (!target.clock) return skipOnDeployment(ctx, NEEDS.clock);
    const r = await receiver((_req, i) => ({ status: i === 0 ? 500 : 204 }));
    await register(r.url, ["email.delivered"]);
    await sendAndSettle(sim("delivered"));
    await r.waitFor(1);
    target.clock!.advance(6000);
    await target.service!.deps.webhooks.engine.dispatchDue();
    await r.waitFor(2);
    const [first, second] = r.received;
    expect(second!.json.id).toBe(first!.json.id);
    expect(second!.headers["webhook-id"]).toBe(first!.json.id);
    expect(second!.raw.equals(first!.raw)).toBe(true);
  });

  it("EM-4 each subscribed event is a POST of {type, createdAt, data: {id, toEmail, status}}, verified by an independent Standard Webhooks library", async () => {
    const r = await receiver();
    const hook = await register(r.url, ["email.delivered"]);
    const to = sim("delivered");
    const emailId = await sendAndSettle(to);
    await r.waitFor(1);
    const got = r.received[0]!;
    expect(got.method).toBe("POST");
    expect(got.headers["content-type"]).toMatch(/^application\/json/);
    expect(got.json).toMatchObject({
      type: "email.delivered",
      data: { id: emailId, toEmail: to, status: "Delivered", metadata: { orderId: "1042" } },
    });
    expect(got.json.createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(serviceSignatureValid(got, hook.secret)).toBe(true);
    expect(serviceSignatureValid(got, hook.secret + "x")).toBe(false);
    // Standard Webhooks, checked by its own library.
    const verified = new Webhook(hook.secret).verify(got.raw.toString("utf8"), {
      "webhook-id": String(got.headers["webhook-id"]),
      "webhook-timestamp": String(got.headers["webhook-timestamp"]),
      "webhook-signature": String(got.headers["webhook-signature"]),
    });
    expect(verified).toMatchObject({ type: "email.delivered" });
  });

  it("EM-8 email.bounced carries status Bounced and errorMessage; EM-9 email.complained is delivered too", async () => {
    const r = await receiver();
    await register(r.url, ["email.bounced", "email.complained"]);
    const bounced = sim("bounced");
    const complained = sim("complained");
    await sendAndSettle(bounced);
    await sendAndSettle(complained);
    await r.waitFor(2);
    const byType = Object.fromEntries(r.received.map((x) => [x.json.type, x.json]));
    expect(byType["email.bounced"].data).toMatchObject({ toEmail: bounced, status: "Bounced", bounceType: "hard", smtpStatus: "5.1.1" });
    expect(byType["email.bounced"].data.errorMessage).toMatch(/^550 5\.1\.1/);
    expect(byType["email.complained"].data).toMatchObject({ toEmail: complained, status: "Complained" });
  });

  it("X-EM-11 a test event is signed like any delivery and marked isTest", async (ctx) => {
    if (!target.service) return skipOnDeployment(ctx, NEEDS.service);
    const r = await receiver();
    const hook = await register(r.url, ["email.delivered"]);
    const sent = await api().POST("/v1/webhooks/{webhookId}/test", {
      params: { path: { webhookId: hook.id } },
      body: { type: "email.bounced" },
    });
    expect(sent.response.status).toBe(202);
    expect(sent.data!.isTest).toBe(true);
    await target.service!.deps.webhooks.engine.dispatchDue();
    await r.waitFor(1);
    expect(r.received[0]!.json.type).toBe("email.bounced");
    expect(serviceSignatureValid(r.received[0]!, hook.secret)).toBe(true);
  });

  it("X-EM-10 during a rotation overlap webhook-signature carries both secrets' signatures; X-Service-Signature uses the new one", async () => {
    const r = await receiver();
    const hook = await register(r.url, ["email.delivered"]);
    const rotated = await api().POST("/v1/webhooks/{webhookId}/rotate-secret", {
      params: { path: { webhookId: hook.id } },
      body: { overlapSeconds: 3600 },
    });
    expect(rotated.response.status).toBe(200);
    const secret = rotated.data!.secret;
    await sendAndSettle(sim("delivered"));
    await r.waitFor(1);
    const got = r.received[0]!;
    expect(String(got.headers["webhook-signature"]).split(" ")).toHaveLength(2);
    expect(serviceSignatureValid(got, secret)).toBe(true);
    for (const each of [hook.secret, secret]) {
      expect(() =>
        new Webhook(each).verify(got.raw.toString("utf8"), {
          "webhook-id": String(got.headers["webhook-id"]),
          "webhook-timestamp": String(got.headers["webhook-timestamp"]),
          "webhook-signature": String(got.headers["webhook-signature"]),
        }),
      ).not.toThrow();
    }
  });
  // Last: it moves the service clock days ahead (receivers check webhook-timestamp against real time).
  it("X-EM-12 a receiver's 401 (signature refused) is a failed attempt: the delivery stays pending, a redelivery is refused 409 delivery_pending until it ends, deactivating the webhook ends it failed, and a redelivery then succeeds", async () => {
    // The receiver contract's own 401 answer (email-webhooks: "Bad signature"), until the receiver is fixed.
    let refuse = true;
    const r = await receiver(() =>
      refuse
        ? {
            status: 401,
            headers: { "content-type": "application/problem+json" },
            body: JSON.stringify({
              type: "about:blank",
              title: "Unauthorized",
              status: 401,
              code: "invalid_signature",
              detail: "X-Service-Signature does not match the body.",
            }),
          }
        : { status: 204 },
    );
    const hook = await register(r.url, ["email.delivered"]);
    await sendAndSettle(sim("delivered"));
    await r.waitFor(1);
    const webhookId = hook.id;
    const [listed] = (await api().GET("/v1/webhooks/{webhookId}/deliveries", { params: { path: { webhookId } } })).data!.items;
    const path = { webhookId, deliveryId: listed!.id };
    const delivery = () => api().GET("/v1/webhooks/{webhookId}/deliveries/{deliveryId}", { params: { path } });
    const redeliver = () => api().POST("/v1/webhooks/{webhookId}/deliveries/{deliveryId}/redeliver", { params: { path } });
    const setActive = (isActive: boolean) =>
      api().PATCH("/v1/webhooks/{webhookId}", { params: { path: { webhookId } }, body: { isActive } });
    const pending = await delivery();
    expect(pending.response.status).toBe(200);
    expect(pending.data).toMatchObject({
      id: listed!.id,
      webhookId: hook.id,
      status: "pending",
      attemptCount: 1,
      attempts: [{ attemptNumber: 1, success: false, statusCode: 401, error: "non_2xx" }],
    });
    expect(pending.data!.nextAttemptAt).toEqual(expect.any(String));

    const early = await redeliver();
    expect(early.response.status).toBe(409);
    expect(early.error).toMatchObject({ status: 409, code: "delivery_pending" });

    const off = await setActive(false);
    expect(off.response.status).toBe(200);
    expect(off.data).toMatchObject({ id: hook.id, isActive: false });
    expect((await delivery()).data).toMatchObject({ status: "failed", attemptCount: 1 });

    refuse = false;
    expect((await setActive(true)).data).toMatchObject({ isActive: true });
    const again = await redeliver();
    expect(again.response.status).toBe(202);
    await target.settle();
    await r.waitFor(2);
    expect(r.received[1]!.json.id).toBe(r.received[0]!.json.id);
    await waitUntil(async () => (await delivery()).data!.status === "succeeded");
    const done = (await delivery()).data!;
    expect(done.attempts.at(-1)).toMatchObject({ trigger: "manual", success: true, statusCode: 204 });
  });

  it("EM-6 without a 2xx the delivery is retried with exponential backoff (5 s, 30 s, 3 min, …) and ends failed after the 7th attempt, with one event id throughout", async (ctx) => {
    if (!target.clock) return skipOnDeployment(ctx, NEEDS.clock);
    const r = await receiver(() => ({ status: 503 }));
    const hook = await register(r.url, ["email.delivered"]);
    await sendAndSettle(sim("delivered"));
    await r.waitFor(1);
    const clock = target.clock!;
    // The schedule with the conformance target's fixed jitter source (0.5: no spread): 5 s × 6^(n−2).
    const delays = [5, 30, 180, 1080, 6480, 38880].map((s) => s * 1000);
    for (const [i, delay] of delays.entries()) {
      clock.advance(delay - 1000);
      await target.service!.deps.webhooks.engine.dispatchDue();
      expect(r.received.length, `attempt ${i + 2} must not run before its delay`).toBe(i + 1);
      clock.advance(1000);
      await target.service!.deps.webhooks.engine.dispatchDue();
      await r.waitFor(i + 2);
    }
    const ids = new Set(r.received.map((x) => x.headers["webhook-id"]));
    expect(ids.size).toBe(1);
    expect([...ids][0]).toBe(r.received[0]!.json.id);
    const list = await api().GET("/v1/webhooks/{webhookId}/deliveries", { params: { path: { webhookId: hook.id } } });
    expect(list.data!.items[0]).toMatchObject({ status: "failed", attemptCount: 7 });
    clock.advance(100 * 3600 * 1000);
    await target.service!.deps.webhooks.engine.dispatchDue();
    expect(r.received.length).toBe(7);
  });
});

void waitUntil;
