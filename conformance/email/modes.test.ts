/**
 * X-EM-27 test and live keys keep apart, as Stripe's test mode does: a message, a webhook endpoint
 * and a suppression-list entry belong to one mode; a key sees and changes only its own mode's (404
 * for the other's), events go only to endpoints of their message's mode, and a test key manages
 * only test keys. X-EM-4: an Idempotency-Key belongs to the API key that sent it.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { components } from "../../generated/sdk/types/email.ts";
import { expectStatus } from "../harness/api.ts";
import { emailWorld, type EmailWorld } from "../harness/worlds.ts";
import { NEEDS, skipRunningTest } from "../harness/skip.ts";
import type { EmailTarget } from "../harness/targets.ts";
import { startReceiver, type Receiver } from "../identity/webhooks-fixtures.ts";

type EmailCreate = components["schemas"]["EmailCreate"];

let target: EmailTarget;
let api: EmailWorld["api"];
/** A full-access test key, made by the live full-access key. */
let testKey: { id: string; key: string };
let n = 0;
/** A fresh simulator address (bounces and complaints suppress an address). */
const sim = (local: string) => `${local}+m${Date.now().toString(36)}${++n}@simulator.test`;
const receipt = { from: "receipts@shop.example.com", subject: "Your receipt", text: "Thanks." };
const send = (key: string | undefined, body: Pick<EmailCreate, "to"> & Partial<EmailCreate>, idempotencyKey?: string) =>
  api(key).POST("/v1/emails", {
    body: { ...receipt, ...body },
    ...(idempotencyKey ? { params: { header: { "Idempotency-Key": idempotencyKey } } } : {}),
  });
const getEmail = (key: string | undefined, emailId: string) => api(key).GET("/v1/emails/{emailId}", { params: { path: { emailId } } });
const listEmailIds = async (key: string | undefined) =>
  (await expectStatus(api(key).GET("/v1/emails", { params: { query: { page: 1, pageSize: 100 } } }), 200, "list emails")).items.map(
    (e) => e.id,
  );

const receivers: Receiver[] = [];
beforeAll(async () => {
  ({ target, api } = await emailWorld());
  testKey = await expectStatus(api().POST("/v1/api-keys", { body: { name: "X-EM-27 test", mode: "test" } }), 201, "test key");
});
afterAll(async () => {
  for (const r of receivers) await r.close();
  await target?.close();
});

describe("test and live apart (X-EM-27)", () => {
  it("X-EM-27 a test key neither reads nor lists live messages (404 not_found, their rendered copies too), and a live key not test ones", async () => {
    const liveTo = sim("delivered");
    const live = await expectStatus(send(undefined, { to: [liveTo], html: "<p>live secret</p>" }), 202, "live send");
    const test = await expectStatus(send(testKey.key, { to: [sim("delivered")] }), 202, "test send");

    const hidden = await getEmail(testKey.key, live.id);
    expect(hidden.response.status).toBe(404);
    expect(hidden.error).toMatchObject({ status: 404, code: "not_found" });
    const rendered = await api(testKey.key).GET("/v1/emails/{emailId}/recipients/{recipient}/content", {
      params: { path: { emailId: live.id, recipient: liveTo } },
    });
    expect(rendered.response.status).toBe(404);
    expect(JSON.stringify(rendered.error)).not.toContain("live secret");
    // Other files' test messages may share the list on a deployment: this one is in it, the live one never.
    const testIds = await listEmailIds(testKey.key);
    expect(testIds).toContain(test.id);
    expect(testIds).not.toContain(live.id);

    expect((await getEmail(undefined, test.id)).response.status).toBe(404);
    const liveIds = await listEmailIds(undefined);
    expect(liveIds).toContain(live.id);
    expect(liveIds).not.toContain(test.id);
    // Each key still reads its own.
    expect((await getEmail(testKey.key, test.id)).response.status).toBe(200);
    expect((await getEmail(undefined, live.id)).response.status).toBe(200);
  });

  it("X-EM-27 a test key lists and revokes only test keys: a live key is 404 to it and keeps working; a live key manages both", async () => {
    const live = await expectStatus(api().POST("/v1/api-keys", { body: { name: "X-EM-27 live" } }), 201, "live key");
    const otherTest = await expectStatus(api().POST("/v1/api-keys", { body: { name: "X-EM-27 test 2", mode: "test" } }), 201, "test key");

    const listed = await expectStatus(api(testKey.key).GET("/v1/api-keys", { params: { query: { pageSize: 100 } } }), 200, "list");
    expect(listed.items.every((k) => k.mode === "test")).toBe(true);
    expect(listed.items.map((k) => k.id)).toEqual(expect.arrayContaining([testKey.id, otherTest.id]));
    expect(listed.totalCount).toBe(listed.items.length);

    const refused = await api(testKey.key).DELETE("/v1/api-keys/{apiKeyId}", { params: { path: { apiKeyId: live.id } } });
    expect(refused.response.status).toBe(404);
    expect(refused.error).toMatchObject({ status: 404, code: "not_found" });
    expect((await api(live.key).GET("/v1/emails")).response.status).toBe(200);

    // The live key sees both modes' keys and revokes a test key.
    const all = await expectStatus(api().GET("/v1/api-keys", { params: { query: { pageSize: 100 } } }), 200, "list all");
    expect(all.items.map((k) => k.id)).toEqual(expect.arrayContaining([live.id, otherTest.id, testKey.id]));
    const revoked = await api().DELETE("/v1/api-keys/{apiKeyId}", { params: { path: { apiKeyId: otherTest.id } } });
    expect(revoked.response.status).toBe(204);
    // A test key may revoke a test key (itself included): here the one the live key did not.
    const third = await expectStatus(api().POST("/v1/api-keys", { body: { name: "X-EM-27 test 3", mode: "test" } }), 201, "test key");
    expect((await api(testKey.key).DELETE("/v1/api-keys/{apiKeyId}", { params: { path: { apiKeyId: third.id } } })).response.status).toBe(
      204,
    );
  });

  it("X-EM-27 webhooks: each key sees only its mode's endpoints (404 for the other's); live events reach only live endpoints, test events only test ones", async () => {
    if (!target.service) skipRunningTest(NEEDS.webhookReceivers);
    await target.settle(); // the earlier tests' messages have their outcomes (and events) before the endpoints exist
    const liveReceiver = await startReceiver(undefined, "email-webhooks");
    const testReceiver = await startReceiver(undefined, "email-webhooks");
    receivers.push(liveReceiver, testReceiver);
    const events: components["schemas"]["WebhookEventType"][] = ["email.delivered"];
    const liveHook = await expectStatus(api().POST("/v1/webhooks", { body: { url: liveReceiver.url, events } }), 201, "live hook");
    const testHook = await expectStatus(
      api(testKey.key).POST("/v1/webhooks", { body: { url: testReceiver.url, events } }),
      201,
      "test hook",
    );

    for (const [key, other] of [
      [testKey.key, liveHook.id],
      [undefined, testHook.id],
    ] as const) {
      const path = { params: { path: { webhookId: other } } };
      expect((await api(key).GET("/v1/webhooks/{webhookId}", path)).response.status).toBe(404);
      expect((await api(key).PATCH("/v1/webhooks/{webhookId}", { ...path, body: { isActive: false } })).response.status).toBe(404);
      expect((await api(key).POST("/v1/webhooks/{webhookId}/rotate-secret", { ...path, body: {} })).response.status).toBe(404);
      expect((await api(key).GET("/v1/webhooks/{webhookId}/deliveries", path)).response.status).toBe(404);
      expect((await api(key).POST("/v1/webhooks/{webhookId}/test", { ...path, body: {} })).response.status).toBe(404);
      expect((await api(key).DELETE("/v1/webhooks/{webhookId}", path)).response.status).toBe(404);
      const list = await expectStatus(api(key).GET("/v1/webhooks", { params: { query: { pageSize: 100 } } }), 200, "list hooks");
      expect(list.items.map((w) => w.id)).not.toContain(other);
    }

    const live = await expectStatus(send(undefined, { to: [sim("delivered")] }), 202, "live send");
    const test = await expectStatus(send(testKey.key, { to: [sim("delivered")] }), 202, "test send");
    await target.settle();
    expect(liveReceiver.received.map((r) => r.json.data.id)).toEqual([live.id]);
    expect(testReceiver.received.map((r) => r.json.data.id)).toEqual([test.id]);
  });

  it("X-EM-27 suppressions: a test key cannot read or lift a live complaint (404, even with force), and its own entries stop test sends only", async () => {
    const complained = sim("complained");
    await expectStatus(send(undefined, { to: [complained] }), 202, "live send");
    await target.settle();
    const path = { params: { path: { email: complained } } };
    expect((await expectStatus(api().GET("/v1/suppressions/{email}", path), 200, "live entry")).reason).toBe("complaint");

    expect((await api(testKey.key).GET("/v1/suppressions/{email}", path)).response.status).toBe(404);
    const lift = await api(testKey.key).DELETE("/v1/suppressions/{email}", {
      params: { path: { email: complained }, query: { force: true } },
    });
    expect(lift.response.status).toBe(404);
    const testList = await expectStatus(api(testKey.key).GET("/v1/suppressions", { params: { query: { pageSize: 100 } } }), 200, "list");
    expect(testList.items.map((s) => s.email)).not.toContain(complained);
    // Still suppressed for live mail.
    expect((await api().GET("/v1/suppressions/{email}", path)).response.status).toBe(200);
    expect((await send(undefined, { to: [complained] })).error?.code).toBe("recipient_suppressed");

    // A test key's entry stops test sends, never live ones.
    const manual = sim("delivered");
    expect((await api(testKey.key).POST("/v1/suppressions", { body: { email: manual } })).response.status).toBe(201);
    expect((await send(testKey.key, { to: [manual] })).error?.code).toBe("recipient_suppressed");
    expect((await api().GET("/v1/suppressions/{email}", { params: { path: { email: manual } } })).response.status).toBe(404);
    const liveSend = await expectStatus(send(undefined, { to: [manual] }), 202, "live send to a test-suppressed address");
    expect(liveSend.recipients[0]!.status).toBe("Queued");
  });
});

describe("Idempotency-Key per API key (X-EM-4)", () => {
  it("X-EM-4 the same Idempotency-Key from two API keys is two sends: a live send is never a replay of a test one, and another key's body is no 422", async () => {
    const idem = `x-em-4-${Date.now()}`;
    const to = [sim("delivered")];
    const first = await send(testKey.key, { to }, idem);
    expect(first.response.status).toBe(202);

    const live = await send(undefined, { to }, idem);
    expect(live.response.status).toBe(202);
    expect(live.response.headers.get("idempotent-replayed")).toBeNull();
    expect(live.data!.id).not.toBe(first.data!.id);

    // Another live key, another body: its own first use of the key.
    const other = await expectStatus(api().POST("/v1/api-keys", { body: { name: "X-EM-4 other" } }), 201, "key");
    const otherSend = await send(other.key, { to, subject: "Another receipt" }, idem);
    expect(otherSend.response.status).toBe(202);
    expect(otherSend.response.headers.get("idempotent-replayed")).toBeNull();

    // Within one API key the rule is unchanged: same body replays, another body is 422.
    const replay = await send(undefined, { to }, idem);
    expect(replay.response.status).toBe(202);
    expect(replay.response.headers.get("idempotent-replayed")).toBe("true");
    expect(replay.data!.id).toBe(live.data!.id);
    const reused = await send(undefined, { to, subject: "Changed" }, idem);
    expect(reused.response.status).toBe(422);
    expect(reused.error?.code).toBe("idempotency_key_reused");
    const testReplay = await send(testKey.key, { to }, idem);
    expect(testReplay.data!.id).toBe(first.data!.id);
  });
});
