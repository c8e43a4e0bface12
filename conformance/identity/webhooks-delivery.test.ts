/**
 * ID-EV-1…5, ID-WH-4/5 (effects on deliveries) and the delivery decisions X-ID-WH-2…4: what real
 * receivers started by these tests get. Retries are driven by the service's clock (no waiting).
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { identityApi } from "../harness/api.ts";
import { createHmac, randomBytes } from "node:crypto";
import { verify } from "@octokit/webhooks-methods";
import { freePort } from "../../support/free-port.ts";
import { identityOnDeployment, NEEDS, skipFileOnDeployment, skipOnDeployment } from "../harness/skip.ts";
import {
  createApplication,
  createWebhook,
  history,
  publishEvent,
  settle,
  startReceiver,
  userData,
  waitForHistory,
  waitUntil,
  webhookWorld,
  type Answer,
  type Receiver,
  type Received,
  type WebhookWorld,
} from "./webhooks-fixtures.ts";

let world: WebhookWorld;
let app: { id: string; clientId: string; name: string };
const receivers: Receiver[] = [];
const receiver = async (answer?: (r: Received, i: number) => Answer) => {
  const r = await startReceiver(answer);
  receivers.push(r);
  return r;
};
/** The path parameters of one webhook of `app`. */
const webhook = (webhookId: string) => ({ path: { appId: app.id, webhookId } });
/** PUT { isActive } through the typed client. */
const setActive = async (webhookId: string, isActive: boolean) =>
  (await world.api()).PUT("/api/applications/{appId}/webhooks/{webhookId}", { params: webhook(webhookId), body: { isActive } });
const deleteWebhook = async (webhookId: string) =>
  (await world.api()).DELETE("/api/applications/{appId}/webhooks/{webhookId}", { params: webhook(webhookId) });
/** The webhook as `app`'s list shows it. */
const inList = async (webhookId: string) => {
  const list = await (await world.api()).GET("/api/applications/{appId}/webhooks", {
    params: { path: { appId: app.id }, query: { pageSize: 100 } },
  });
  return list.data!.items.find((w) => w.id === webhookId);
};
const redeliver = async (webhookId: string, deliveryId: string) =>
  (await world.api()).POST("/api/applications/{appId}/webhooks/{webhookId}/deliveries/{deliveryId}/redeliver", {
    params: { path: { appId: app.id, webhookId, deliveryId } },
  });

/** A webhook of `app` for user.created at a new receiver that answers `answer`, with the retry settings given. */
const hookedReceiver = async (
  answer?: (r: Received, i: number) => Answer,
  retries: { maxRetries?: number; retryDelaySeconds?: number } = {},
) => {
  const r = await receiver(answer);
  const hook = await createWebhook(world, app.id, { url: r.url, events: ["user.created"], ...retries });
  return { r, hook };
};
/** One user.created event of `app`, and the first attempt of `webhookId`'s delivery of it, once in the history. */
const firstAttempt = async (webhookId: string) => {
  await publishEvent(world, "user.created", [app.id], userData());
  const [attempt] = await waitForHistory(world, app.id, webhookId, 1);
  return attempt;
};
/** Moves the service's clock: retries and secret overlaps end by it (in-process only; the file skips on a deployment). */
const advance = (ms: number) => world.target.clock!.advance(ms);

skipFileOnDeployment(identityOnDeployment(), NEEDS.webhookReceivers);
beforeAll(async () => {
  if (identityOnDeployment()) return;
  ({ app } = world = await webhookWorld());
});
afterEach(async () => {
  for (const r of receivers.splice(0)) await r.close();
});
afterAll(async () => world?.close());

/** Standard Webhooks check, written from the specification (not with our signing code). */
function standardSignatures(r: Received, secret: string): { valid: boolean; entries: number } {
  const key = Buffer.from(secret.slice("whsec_".length), "base64");
  const expected = createHmac("sha256", key)
    .update(`${r.headers["webhook-id"]}.${r.headers["webhook-timestamp"]}.${r.raw.toString("utf8")}`)
    .digest("base64");
  const entries = String(r.headers["webhook-signature"]).split(" ");
  return { valid: entries.includes(`v1,${expected}`), entries: entries.length };
}

describe("the delivery request", () => {
  it("ID-EV-2 a delivery is a POST of JSON {id, event, timestamp, data} with X-Webhook-Signature (sha256=<hex HMAC of the raw body>), X-Webhook-Event and X-Webhook-Delivery-Id", async () => {
    const { r, hook } = await hookedReceiver();
    const data = userData();
    await publishEvent(world, "user.created", [app.id], data);
    await r.waitFor(1);
    const got = r.received[0]!;
    expect(got.method).toBe("POST");
    expect(got.url).toBe("/hook");
    expect(got.headers["content-type"]).toBe("application/json");
    expect(Object.keys(got.json).sort()).toEqual(["data", "event", "id", "timestamp"]);
    expect(got.json).toMatchObject({ event: "user.created", data });
    expect(got.json.timestamp).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/);
    expect(got.headers["x-webhook-event"]).toBe("user.created");
    expect(got.headers["x-webhook-delivery-id"]).toBe(got.json.id);
    const signature = String(got.headers["x-webhook-signature"]);
    expect(signature).toMatch(/^sha256=[0-9a-f]{64}$/);
    // The independent verifier (GitHub's format: sha256=<lowercase hex>), over the exact bytes.
    expect(await verify(hook.secret, got.raw.toString("utf8"), signature)).toBe(true);
    expect(await verify(hook.secret, got.raw.toString("utf8") + " ", signature)).toBe(false);
    expect(await verify(`${hook.secret}x`, got.raw.toString("utf8"), signature)).toBe(false);
    expect(signature).toBe(`sha256=${createHmac("sha256", hook.secret).update(got.raw).digest("hex")}`);
    // Standard Webhooks headers (X-ID-WH-4).
    expect(got.headers["webhook-id"]).toBe(got.json.id);
    expect(Math.abs(Number(got.headers["webhook-timestamp"]) - Date.now() / 1000)).toBeLessThan(60);
    expect(standardSignatures(got, hook.secret)).toEqual({ valid: true, entries: 1 });
    // The history names the same delivery.
    const [attempt] = await waitForHistory(world, app.id, hook.id, 1);
    expect(attempt).toMatchObject({ id: got.json.id, success: true, statusCode: 204, attemptNumber: 1, trigger: "event" });
  });
});

describe("user events", () => {
  it("ID-EV-1 user.created on registration (userId, email, firstName, lastName), user.updated on a profile update, user.deleted on deletion", async (ctx) => {
    if (!world.target.service) return skipOnDeployment(ctx, NEEDS.service);
    const r = await receiver();
    await createWebhook(world, app.id, { url: r.url, events: ["user.created", "user.updated", "user.deleted"] });
    const email = `ev1-${randomBytes(4).toString("hex")}@example.com`;
    const registered = await identityApi(world).POST("/api/users", {
      body: { clientId: app.clientId, email, password: "correct horse battery staple", firstName: "Ada", lastName: "Lovelace" },
    });
    expect(registered.response.status).toBe(201);
    await r.waitFor(1);
    const userId = registered.data!.id;
    expect(r.received[0]!.json).toMatchObject({ event: "user.created", data: { userId, email, firstName: "Ada", lastName: "Lovelace" } });
    expect(Object.keys(r.received[0]!.json.data).sort()).toEqual(["email", "firstName", "lastName", "userId"]);

    // The user's own token of the dashboard client (the one that may change an account), minted in-process.
    const tokens = world.target.service!.ctx.accessTokens;
    const { token: dashboardToken } = await tokens.issue({
      userId,
      clientId: "identity-dashboard",
      scopes: ["openid", "profile", "email"],
    });
    const asUser = identityApi(world, { token: dashboardToken });
    const updated = await asUser.PATCH("/api/users/me", { body: { lastName: "King" } });
    expect(updated.response.status, JSON.stringify(updated.error)).toBe(200);
    await r.waitFor(2);
    expect(r.received[1]!.json).toMatchObject({
      event: "user.updated",
      data: { userId, email, firstName: "Ada", lastName: "King", changedFields: ["lastName"] },
    });

    const deleted = await asUser.DELETE("/api/users/me");
    expect(deleted.response.status).toBe(204);
    await r.waitFor(3);
    expect(r.received[2]!.json).toMatchObject({ event: "user.deleted", data: { userId } });
    expect(r.received.map((x) => x.headers["x-webhook-event"])).toEqual(["user.created", "user.updated", "user.deleted"]);
    expect(new Set(r.received.map((x) => x.json.id)).size).toBe(3);
  });

  it("ID-EV-3 only active webhooks subscribed to the event (of the event's application) receive it", async () => {
    const [subscribed, otherEvent, inactive, otherApp] = await Promise.all([receiver(), receiver(), receiver(), receiver()]);
    await createWebhook(world, app.id, { url: subscribed.url, events: ["user.updated", "user.created"] });
    await createWebhook(world, app.id, { url: otherEvent.url, events: ["user.deleted"] });
    const off = await createWebhook(world, app.id, { url: inactive.url, events: ["user.created"] });
    expect((await setActive(off.id, false)).response.status).toBe(200);
    const second = await createApplication(world);
    await createWebhook(world, second.id, { url: otherApp.url, events: ["user.created"] });

    await publishEvent(world, "user.created", [app.id], userData());
    await subscribed.waitFor(1);
    await settle();
    expect(subscribed.received).toHaveLength(1);
    expect(otherEvent.received).toHaveLength(0);
    expect(inactive.received).toHaveLength(0);
    expect(otherApp.received).toHaveLength(0);

    // Reactivated, it receives later events (and nothing it missed).
    expect((await setActive(off.id, true)).response.status).toBe(200);
    await publishEvent(world, "user.created", [app.id], userData());
    await inactive.waitFor(1);
    await subscribed.waitFor(2);
    await settle();
    expect(inactive.received).toHaveLength(1);
  });
});

describe("failures and retries", () => {
  it("ID-EV-4 any 2xx answer is a success: 200, 202 and 204 each end the delivery in one attempt", async () => {
    for (const status of [200, 202, 204]) {
      const r = await receiver(() => ({ status }));
      const hook = await createWebhook(world, app.id, { url: r.url, events: ["user.created"] });
      await publishEvent(world, "user.created", [app.id], userData());
      await r.waitFor(1);
      const [attempt] = await waitForHistory(world, app.id, hook.id, 1);
      expect(attempt, `answer ${status}`).toMatchObject({ success: true, statusCode: status, attemptNumber: 1 });
      await deleteWebhook(hook.id);
    }
  });

  it("ID-EV-4 a delivery fails on a non-2xx answer, on no answer within the time-out, and on a connection error; each is a recorded failed attempt", async () => {
    const failing = await receiver(() => ({ status: 503, body: "x".repeat(5000) }));
    const hanging = await receiver(() => "hang");
    const redirecting = await receiver(() => ({ status: 302, headers: { location: failing.url } }));
    const closedPort = await freePort();
    const h1 = await createWebhook(world, app.id, { url: failing.url, events: ["user.created"], maxRetries: 0 });
    const h2 = await createWebhook(world, app.id, { url: hanging.url, events: ["user.created"], maxRetries: 0 });
    const h3 = await createWebhook(world, app.id, { url: `http://127.0.0.1:${closedPort}/hook`, events: ["user.created"], maxRetries: 0 });
    const h4 = await createWebhook(world, app.id, { url: redirecting.url, events: ["user.created"], maxRetries: 0 });
    const started = Date.now();
    await publishEvent(world, "user.created", [app.id], userData());

    const [non2xx] = await waitForHistory(world, app.id, h1.id, 1);
    expect(non2xx).toMatchObject({ success: false, statusCode: 503, error: "non_2xx", attemptNumber: 1, nextAttemptAt: null });
    expect(non2xx.responseBodyExcerpt).toBe("x".repeat(1024)); // bounded excerpt

    const [timeout] = await waitForHistory(world, app.id, h2.id, 1);
    expect(timeout).toMatchObject({ success: false, statusCode: null, error: "timeout", responseBodyExcerpt: null });
    expect(hanging.received).toHaveLength(1);
    expect(timeout.durationMs).toBeGreaterThanOrEqual(1950); // the configured 2 s (30 s by default)
    expect(Date.now() - started).toBeLessThan(8000);

    const [refused] = await waitForHistory(world, app.id, h3.id, 1);
    expect(refused).toMatchObject({ success: false, statusCode: null, error: "connection_error" });

    const [redirect] = await waitForHistory(world, app.id, h4.id, 1);
    expect(redirect).toMatchObject({ success: false, statusCode: 302, error: "non_2xx" });
    await settle(100);
    expect(failing.received).toHaveLength(1); // the redirect was not followed
  });

  it("ID-EV-5 after a failure the service waits retryDelaySeconds and retries, up to maxRetries times; every attempt is in the history with its attemptNumber (X-ID-WH-3 final state)", async (ctx) => {
    if (!world.target.clock) return skipOnDeployment(ctx, NEEDS.clock);
    const { r, hook } = await hookedReceiver(() => ({ status: 500 }), { maxRetries: 2, retryDelaySeconds: 30 });
    await firstAttempt(hook.id);
    advance(29_000);
    await settle();
    expect(r.received).toHaveLength(1); // not before retryDelaySeconds
    advance(1_000);
    await r.waitFor(2);
    await waitForHistory(world, app.id, hook.id, 2);
    advance(30_000);
    await r.waitFor(3);
    const items = await waitForHistory(world, app.id, hook.id, 3);
    advance(3600_000);
    await settle();
    expect(r.received).toHaveLength(3); // 1 + maxRetries, then final

    expect(items.map((d) => d.attemptNumber)).toEqual([3, 2, 1]);
    expect(items.map((d) => d.trigger)).toEqual(["retry", "retry", "event"]);
    expect(new Set(items.map((d) => d.id)).size).toBe(1);
    for (const d of items) expect(d).toMatchObject({ success: false, statusCode: 500, error: "non_2xx" });
    expect(items[0]!.nextAttemptAt).toBeNull();
    for (const d of items.slice(1)) expect(Date.parse(d.nextAttemptAt) - Date.parse(d.deliveredAt)).toBeGreaterThanOrEqual(30_000);
    expect(Date.parse(items[1].deliveredAt) - Date.parse(items[2].deliveredAt)).toBeGreaterThanOrEqual(30_000);
    // X-ID-WH-2: the same delivery id and the same body bytes on every attempt.
    expect(new Set(r.received.map((x) => x.headers["x-webhook-delivery-id"]))).toEqual(new Set([items[0].id]));
    expect(new Set(r.received.map((x) => x.raw.toString("hex"))).size).toBe(1);
    // The webhook itself stays active (X-ID-WH-3).
    expect((await inList(hook.id))!.isActive).toBe(true);
  });

  it("X-ID-WH-3 when retries are exhausted the delivery is failed for good: last record success false and nextAttemptAt null, the webhook stays active, a manual redelivery still works", async (ctx) => {
    if (!world.target.clock) return skipOnDeployment(ctx, NEEDS.clock);
    let ok = false;
    const { r, hook } = await hookedReceiver(() => (ok ? { status: 200 } : { status: 502 }), { maxRetries: 1, retryDelaySeconds: 2 });
    await firstAttempt(hook.id);
    advance(2_000);
    const items = await waitForHistory(world, app.id, hook.id, 2);
    expect(items[0]).toMatchObject({ attemptNumber: 2, success: false, nextAttemptAt: null });
    advance(24 * 3600_000);
    await settle();
    expect(r.received).toHaveLength(2);
    const listed = await inList(hook.id);
    expect(listed!.isActive).toBe(true);
    ok = true;
    const redo = await redeliver(hook.id, items[0].id);
    expect(redo.response.status).toBe(202);
    expect(redo.data!.attemptNumber).toBe(3);
    const after = await waitForHistory(world, app.id, hook.id, 3);
    expect(after[0]).toMatchObject({ id: items[0].id, attemptNumber: 3, success: true, trigger: "manual", nextAttemptAt: null });
  });

  it("X-ID-WH-2 a retry that succeeds ends the delivery: same delivery id, success recorded, no further attempts", async (ctx) => {
    if (!world.target.clock) return skipOnDeployment(ctx, NEEDS.clock);
    const { r, hook } = await hookedReceiver((_req, i) => (i === 0 ? "destroy" : { status: 200, body: '{"received":true}' }), {
      maxRetries: 3,
      retryDelaySeconds: 5,
    });
    await firstAttempt(hook.id);
    advance(5_000);
    await r.waitFor(2);
    const items = await waitForHistory(world, app.id, hook.id, 2);
    advance(60_000);
    await settle();
    expect(r.received).toHaveLength(2);
    expect(items[0]).toMatchObject({
      attemptNumber: 2,
      success: true,
      statusCode: 200,
      responseBodyExcerpt: '{"received":true}',
      nextAttemptAt: null,
    });
    expect(items[1]).toMatchObject({ attemptNumber: 1, success: false, error: "connection_error" });
    expect(r.received[1]!.headers["x-webhook-delivery-id"]).toBe(items[0].id);
  });
});

describe("stopping deliveries", () => {
  it("ID-WH-4 a deleted webhook receives no more deliveries, pending retries included", async (ctx) => {
    if (!world.target.clock) return skipOnDeployment(ctx, NEEDS.clock);
    const { r, hook } = await hookedReceiver(() => ({ status: 500 }), { maxRetries: 5, retryDelaySeconds: 10 });
    await firstAttempt(hook.id);
    expect((await deleteWebhook(hook.id)).response.status).toBe(204);
    advance(10_000);
    await publishEvent(world, "user.created", [app.id], userData());
    await settle();
    expect(r.received).toHaveLength(1);
  });

  it("ID-WH-3 isActive false stops deliveries and cancels pending retries", async (ctx) => {
    if (!world.target.clock) return skipOnDeployment(ctx, NEEDS.clock);
    const { r, hook } = await hookedReceiver(() => ({ status: 500 }), { maxRetries: 5, retryDelaySeconds: 10 });
    const first = await firstAttempt(hook.id);
    expect(first.nextAttemptAt).not.toBeNull();
    expect((await setActive(hook.id, false)).response.status).toBe(200);
    advance(10_000);
    await publishEvent(world, "user.created", [app.id], userData());
    await settle();
    expect(r.received).toHaveLength(1);
    const items = await history(world, app.id, hook.id);
    expect(items).toHaveLength(1);
    expect(items[0]!.nextAttemptAt).toBeNull();
    // Reactivating does not resurrect the cancelled retries.
    expect((await setActive(hook.id, true)).response.status).toBe(200);
    advance(60_000);
    await settle();
    expect(r.received).toHaveLength(1);
  });
});

describe("secrets", () => {
  it("ID-WH-5 after regenerate-secret, deliveries are signed with the new secret only", async () => {
    const { r, hook } = await hookedReceiver();
    await publishEvent(world, "user.created", [app.id], userData());
    await r.waitFor(1);
    const regenerated = await (await world.api()).POST("/api/applications/{appId}/webhooks/{webhookId}/regenerate-secret", {
      params: webhook(hook.id),
    });
    expect(regenerated.response.status).toBe(200);
    const fresh = regenerated.data!.secret;
    await publishEvent(world, "user.created", [app.id], userData());
    await r.waitFor(2);
    const [before, after] = r.received as [Received, Received];
    const sig = (x: Received) => String(x.headers["x-webhook-signature"]);
    expect(await verify(hook.secret, before.raw.toString(), sig(before))).toBe(true);
    expect(await verify(fresh, after.raw.toString(), sig(after))).toBe(true);
    expect(await verify(hook.secret, after.raw.toString(), sig(after))).toBe(false);
    expect(standardSignatures(after, fresh)).toEqual({ valid: true, entries: 1 });
    expect(standardSignatures(after, hook.secret).valid).toBe(false);
  });

  it("X-ID-WH-4 with overlapSeconds, webhook-signature carries the old secret's signature too until the overlap ends; X-Webhook-Signature only the new one", async (ctx) => {
    if (!world.target.clock) return skipOnDeployment(ctx, NEEDS.clock);
    const { r, hook } = await hookedReceiver();
    const res = await (await world.api()).POST("/api/applications/{appId}/webhooks/{webhookId}/regenerate-secret", {
      params: webhook(hook.id),
      body: { overlapSeconds: 120 },
    });
    const fresh = res.data!.secret;
    await publishEvent(world, "user.created", [app.id], userData());
    await r.waitFor(1);
    const during = r.received[0]!;
    expect(standardSignatures(during, fresh)).toEqual({ valid: true, entries: 2 });
    expect(standardSignatures(during, hook.secret).valid).toBe(true);
    expect(await verify(fresh, during.raw.toString(), String(during.headers["x-webhook-signature"]))).toBe(true);
    expect(await verify(hook.secret, during.raw.toString(), String(during.headers["x-webhook-signature"]))).toBe(false);
    advance(121_000);
    await publishEvent(world, "user.created", [app.id], userData());
    await r.waitFor(2);
    const later = r.received[1]!;
    expect(standardSignatures(later, fresh)).toEqual({ valid: true, entries: 1 });
    expect(standardSignatures(later, hook.secret).valid).toBe(false);
  });
});

describe("redelivery and test events", () => {
  it("X-ID-WH-2 a manual redelivery sends the same delivery id and body again as the next attempt, with trigger manual; 409 when the webhook is inactive", async () => {
    const { r, hook } = await hookedReceiver();
    const first = await firstAttempt(hook.id);
    const res = await redeliver(hook.id, first.id);
    expect(res.response.status).toBe(202);
    expect(res.data).toMatchObject({ deliveryId: first.id, webhookId: hook.id, event: "user.created", attemptNumber: 2 });
    // The attempts of this delivery, by its id: on a busy machine another file's service may still
    // retry towards a closed receiver whose port the OS has since given to this one.
    const attempts = () => r.received.filter((x) => x.headers["x-webhook-delivery-id"] === first.id);
    await waitUntil(
      () => attempts().length >= 2,
      5000,
      () => `${attempts().length} of 2 requests carry delivery id ${first.id}`,
    );
    const [original, again] = attempts();
    expect(again!.raw.equals(original!.raw), `first: ${original!.raw.toString()}\nagain: ${again!.raw.toString()}`).toBe(true);
    const items = await waitForHistory(world, app.id, hook.id, 2);
    expect(items[0]).toMatchObject({ id: first.id, attemptNumber: 2, trigger: "manual", success: true });

    await setActive(hook.id, false);
    const inactive = await redeliver(hook.id, first.id);
    expect(inactive.response.status).toBe(409);
    expect(inactive.error!.code).toBe("webhook_inactive");
  });

  it("X-ID-WH-2 a test event is a new signed delivery of synthetic data, sent once even to an inactive or unsubscribed webhook", async (ctx) => {
    if (!world.target.clock) return skipOnDeployment(ctx, NEEDS.clock);
    const { r, hook } = await hookedReceiver(() => ({ status: 500 }), { maxRetries: 3, retryDelaySeconds: 1 });
    await setActive(hook.id, false);
    const sendTest = async (body?: { event: "user.deleted" }) =>
      (await world.api()).POST("/api/applications/{appId}/webhooks/{webhookId}/test", {
        params: webhook(hook.id),
        ...(body ? { body } : {}),
      });
    const res = await sendTest({ event: "user.deleted" });
    expect(res.response.status).toBe(202);
    expect(res.data).toMatchObject({ webhookId: hook.id, event: "user.deleted", attemptNumber: 1 });
    await r.waitFor(1);
    const got = r.received[0]!;
    expect(got.json).toMatchObject({
      id: res.data!.deliveryId,
      event: "user.deleted",
      data: { userId: "00000000-0000-4000-8000-000000000000" },
    });
    expect(await verify(hook.secret, got.raw.toString(), String(got.headers["x-webhook-signature"]))).toBe(true);
    const [attempt] = await waitForHistory(world, app.id, hook.id, 1);
    expect(attempt).toMatchObject({ trigger: "test", success: false, nextAttemptAt: null });
    advance(10_000);
    await settle();
    expect(r.received).toHaveLength(1); // no retries of a test event
    const defaults = await sendTest();
    expect(defaults.response.status).toBe(202);
    expect(defaults.data!.event).toBe("user.created");
  });
});
