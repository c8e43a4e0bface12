/** ID-WH-1…3, ID-WH-5…8 and the API decisions X-ID-WH-1, X-ID-WH-5, X-ID-WH-6: the webhook management endpoints. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomUUID } from "node:crypto";
import type { components } from "../../generated/sdk/types/identity.ts";
import { request } from "../harness/http.ts";
import {
  createApplication,
  createWebhook,
  organizationWithToken,
  publishEvent,
  startReceiver,
  userData,
  waitForHistory,
  webhookWorld,
  type WebhookWorld,
} from "./webhooks-fixtures.ts";
import { identityOnDeployment, NEEDS, skipFileOnDeployment, skipOnDeployment } from "../harness/skip.ts";

let world: WebhookWorld;
let app: { id: string; name: string };
/** Raw paths, for the requests the contract forbids. */
const base = () => `/api/applications/${app.id}/webhooks`;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[1-8][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

skipFileOnDeployment(identityOnDeployment(), NEEDS.webhookReceivers);
beforeAll(async () => {
  if (identityOnDeployment()) return;
  ({ app } = world = await webhookWorld());
});
afterAll(async () => world?.close());

/** A typed client with a fresh admin token (the tests move the clock). */
const admin = () => world.api();
/** Raw requests, for what the contract forbids (bodies, query values, tokens). */
const raw = async (method: string, path: string, json?: unknown, token?: string) =>
  request(world.url, method, path, { token: token ?? (await world.token()), ...(json === undefined ? {} : { json }) });
/** What a typed call resolves to, for the tables of calls below. */
type Sent = Promise<{ error?: unknown; response: Response }>;

describe("create and list", () => {
  it("ID-WH-1 POST needs url and events; maxRetries defaults to 3 and retryDelaySeconds to 60; the 201 carries every field and the secret", async () => {
    const api = await admin();
    const params = { path: { appId: app.id } };
    const res = await api.POST("/api/applications/{appId}/webhooks", {
      params,
      body: { url: "https://hooks.example.com/a", events: ["user.created"] },
    });
    expect(res.response.status).toBe(201);
    const created = res.data!;
    expect(Object.keys(created).sort()).toEqual(
      [
        "applicationId",
        "applicationName",
        "createdAt",
        "events",
        "id",
        "isActive",
        "maxRetries",
        "organizationId",
        "retryDelaySeconds",
        "secret",
        "url",
      ].sort(),
    );
    expect(created.id).toMatch(UUID);
    expect(created).toMatchObject({
      organizationId: world.organizationId,
      applicationId: app.id,
      applicationName: app.name,
      url: "https://hooks.example.com/a",
      events: ["user.created"],
      isActive: true,
      maxRetries: 3,
      retryDelaySeconds: 60,
    });
    expect(created.createdAt).toMatch(ISO_UTC);
    expect(created.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);

    const custom = await api.POST("/api/applications/{appId}/webhooks", {
      params,
      body: { url: "https://hooks.example.com/b", events: ["user.deleted", "user.updated"], maxRetries: 0, retryDelaySeconds: 5 },
    });
    expect(custom.response.status).toBe(201);
    expect(custom.data).toMatchObject({ maxRetries: 0, retryDelaySeconds: 5, events: ["user.deleted", "user.updated"] });
    expect(custom.data!.secret).not.toBe(created.secret);

    for (const body of [{ events: ["user.created"] }, { url: "https://hooks.example.com/c" }]) {
      const bad = await raw("POST", base(), body);
      expect(bad.status).toBe(400);
      expect(bad.body.code).toBe("validation_failed");
    }
  });

  it("ID-WH-2 GET lists the application's webhooks (oldest first, X-ID-WH-5), without secrets, and only this application's", async () => {
    const other = await createApplication(world);
    await createWebhook(world, other.id, { url: "https://hooks.example.com/other", events: ["user.created"] });
    const first = await createWebhook(world, app.id, { url: "https://hooks.example.com/list-1", events: ["user.created"] });
    const second = await createWebhook(world, app.id, { url: "https://hooks.example.com/list-2", events: ["user.updated"] });
    const api = await admin();
    const path = { appId: app.id };
    const res = await api.GET("/api/applications/{appId}/webhooks", { params: { path, query: { pageSize: 100 } } });
    expect(res.response.status).toBe(200);
    const list = res.data!;
    expect(list).toMatchObject({ page: 1, pageSize: 100 });
    const ids = list.items.map((w) => w.id);
    expect(ids).toContain(first.id);
    expect(ids.indexOf(first.id)).toBeLessThan(ids.indexOf(second.id));
    expect(list.totalCount).toBe(list.items.length);
    for (const w of list.items) {
      expect(w.applicationId).toBe(app.id);
      expect(w).not.toHaveProperty("secret");
    }
    const paged = await api.GET("/api/applications/{appId}/webhooks", { params: { path, query: { page: 1, pageSize: 1 } } });
    expect(paged.data!.items).toHaveLength(1);
    expect(paged.data!.totalCount).toBe(list.totalCount);
  });

  it("X-ID-WH-5 webhooks are listed oldest first", async (ctx) => {
    if (!world.target.clock) return skipOnDeployment(ctx, NEEDS.clock);
    const fresh = await createApplication(world);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      ids.push((await createWebhook(world, fresh.id, { url: `https://hooks.example.com/order-${i}`, events: ["user.created"] })).id);
      world.target.clock!.advance(1000);
    }
    const res = await (await admin()).GET("/api/applications/{appId}/webhooks", { params: { path: { appId: fresh.id } } });
    expect(res.data!.items.map((w) => w.id)).toEqual(ids);
    expect(res.data!.totalCount).toBe(3);
  });

  it("ID-WH-7 GET …/webhooks/events lists user.created, user.updated and user.deleted, then the security events (X-ID-AUD-7)", async () => {
    const res = await (await admin()).GET("/api/applications/{appId}/webhooks/events", { params: { path: { appId: app.id } } });
    expect(res.response.status).toBe(200);
    expect(res.data!.items.map((i) => i.event)).toEqual([
      "user.created",
      "user.updated",
      "user.deleted",
      "user.signed_in",
      "user.sign_in_failed",
      "user.second_factor_failed",
      "user.recovery_code_used",
      "user.password_changed",
      "user.factor_enrolled",
      "user.factor_removed",
      "user.recovery_codes_regenerated",
      "session.ended",
      "user.password_reset",
    ]);
    for (const item of res.data!.items) expect(item.description).toEqual(expect.any(String));
  });
});

describe("update, regenerate, delete", () => {
  it("ID-WH-3 PUT updates any of url, events, isActive, maxRetries, retryDelaySeconds; absent fields stay; isActive takes the given value", async () => {
    const hook = await createWebhook(world, app.id, { url: "https://hooks.example.com/u", events: ["user.created"] });
    const api = await admin();
    const path = { appId: app.id, webhookId: hook.id };
    const steps: Array<[components["schemas"]["WebhookUpdate"], Record<string, unknown>]> = [
      [
        { url: "https://hooks.example.com/u2" },
        { url: "https://hooks.example.com/u2", events: ["user.created"], isActive: true, maxRetries: 3, retryDelaySeconds: 60 },
      ],
      [{ events: ["user.updated", "user.deleted"] }, { url: "https://hooks.example.com/u2", events: ["user.updated", "user.deleted"] }],
      [{ isActive: false }, { isActive: false, maxRetries: 3 }],
      [{ maxRetries: 7 }, { isActive: false, maxRetries: 7, retryDelaySeconds: 60 }],
      [
        { retryDelaySeconds: 1, isActive: true },
        { isActive: true, maxRetries: 7, retryDelaySeconds: 1 },
      ],
      [{}, { isActive: true, maxRetries: 7, retryDelaySeconds: 1, url: "https://hooks.example.com/u2" }],
    ];
    for (const [body, expected] of steps) {
      const res = await api.PUT("/api/applications/{appId}/webhooks/{webhookId}", { params: { path }, body });
      expect(res.response.status).toBe(200);
      expect(res.data).toMatchObject({ id: hook.id, ...expected });
      expect(res.data).not.toHaveProperty("secret");
      const list = await api.GET("/api/applications/{appId}/webhooks", { params: { path: { appId: app.id }, query: { pageSize: 100 } } });
      const listed = list.data!.items.find((w) => w.id === hook.id);
      expect(listed).toMatchObject(expected);
    }
  });

  it("ID-WH-5 regenerate-secret returns { secret }, a new one each time (previousSecretExpiresAt null without overlap)", async () => {
    const hook = await createWebhook(world, app.id, { url: "https://hooks.example.com/r", events: ["user.created"] });
    const api = await admin();
    const params = { path: { appId: app.id, webhookId: hook.id } };
    const res = await api.POST("/api/applications/{appId}/webhooks/{webhookId}/regenerate-secret", { params });
    expect(res.response.status).toBe(200);
    expect(res.data!.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(res.data!.secret).not.toBe(hook.secret);
    expect(res.data!.previousSecretExpiresAt).toBeNull();
    const overlap = await api.POST("/api/applications/{appId}/webhooks/{webhookId}/regenerate-secret", {
      params,
      body: { overlapSeconds: 600 },
    });
    expect(overlap.response.status).toBe(200);
    expect(Date.parse(overlap.data!.previousSecretExpiresAt!) - Date.now()).toBeGreaterThan(500_000);
  });

  it("ID-WH-4 DELETE removes the webhook: 204, then 404 and gone from the list", async () => {
    const hook = await createWebhook(world, app.id, { url: "https://hooks.example.com/d", events: ["user.created"] });
    const api = await admin();
    const params = { path: { appId: app.id, webhookId: hook.id } };
    const res = await api.DELETE("/api/applications/{appId}/webhooks/{webhookId}", { params });
    expect(res.response.status).toBe(204);
    expect((await api.DELETE("/api/applications/{appId}/webhooks/{webhookId}", { params })).response.status).toBe(404);
    const put = await api.PUT("/api/applications/{appId}/webhooks/{webhookId}", { params, body: { isActive: true } });
    expect(put.response.status).toBe(404);
    const list = await api.GET("/api/applications/{appId}/webhooks", { params: { path: { appId: app.id }, query: { pageSize: 100 } } });
    expect(list.data!.items.map((w) => w.id)).not.toContain(hook.id);
  });
});

describe("delivery history", () => {
  it("ID-WH-6 GET …/deliveries?page&pageSize returns { items, totalCount, page, pageSize } of delivery records, newest first", async (ctx) => {
    if (!world.target.clock) return skipOnDeployment(ctx, NEEDS.clock);
    const receiver = await startReceiver();
    try {
      const hook = await createWebhook(world, app.id, { url: receiver.url, events: ["user.created"] });
      for (let i = 0; i < 5; i++) {
        await publishEvent(world, "user.created", [app.id], userData());
        await receiver.waitFor(i + 1);
        world.target.clock!.advance(1000); // distinct attempt times
      }
      await waitForHistory(world, app.id, hook.id, 5);
      const api = await admin();
      const path = { appId: app.id, webhookId: hook.id };
      const deliveries = (query?: { page?: number; pageSize?: number }) =>
        api.GET("/api/applications/{appId}/webhooks/{webhookId}/deliveries", { params: { path, query } });
      const res = await deliveries({ page: 1, pageSize: 100 });
      expect(res.response.status).toBe(200);
      const all = res.data!;
      expect(all).toMatchObject({ totalCount: 5, page: 1, pageSize: 100 });
      const times = all.items.map((d) => Date.parse(d.deliveredAt));
      expect([...times].sort((a, b) => b - a)).toEqual(times);
      for (const d of all.items) {
        expect(d.id).toMatch(UUID);
        expect(d).toMatchObject({
          webhookId: hook.id,
          event: "user.created",
          statusCode: 204,
          success: true,
          attemptNumber: 1,
          nextAttemptAt: null,
          trigger: "event",
        });
        expect(d.deliveredAt).toMatch(ISO_UTC);
      }
      // The newest attempt is the last event sent.
      expect(all.items[0]!.id).toBe(receiver.received[4]!.json.id);

      const page2 = (await deliveries({ page: 2, pageSize: 2 })).data!;
      expect(page2).toMatchObject({ totalCount: 5, page: 2, pageSize: 2 });
      expect(page2.items.map((d) => d.attemptId)).toEqual(all.items.slice(2, 4).map((d) => d.attemptId));
      const past = await deliveries({ page: 9, pageSize: 2 });
      expect(past.data).toMatchObject({ items: [], totalCount: 5, page: 9 });
      const defaults = await deliveries();
      expect(defaults.data).toMatchObject({ page: 1, pageSize: 20 });
      // Out of range or not a number: outside the contract.
      const rawPath = `${base()}/${hook.id}/deliveries`;
      for (const q of ["page=0", "pageSize=0", "pageSize=101", "page=x"]) expect((await raw("GET", `${rawPath}?${q}`)).status).toBe(400);
    } finally {
      await receiver.close();
    }
  });

  it("X-ID-WH-6 following `next` as `cursor` visits every record once, newest first, also while new attempts arrive; `next` is null on the last page", async (ctx) => {
    if (!world.target.clock) return skipOnDeployment(ctx, NEEDS.clock);
    const receiver = await startReceiver();
    try {
      const hook = await createWebhook(world, app.id, { url: receiver.url, events: ["user.created"] });
      const send = async (n: number) => {
        const before = receiver.received.length;
        for (let i = 0; i < n; i++) {
          await publishEvent(world, "user.created", [app.id], userData());
          await receiver.waitFor(before + i + 1);
          if (i % 2) world.target.clock!.advance(1000); // pairs share an attempt time: the cursor must still tell them apart
        }
      };
      await send(7);
      await waitForHistory(world, app.id, hook.id, 7);
      const api = await admin();
      const path = { appId: app.id, webhookId: hook.id };
      const deliveries = (query: { pageSize: number; cursor?: string }) =>
        api.GET("/api/applications/{appId}/webhooks/{webhookId}/deliveries", { params: { path, query } });
      const all = (await deliveries({ pageSize: 100 })).data!;
      expect(all).toMatchObject({ totalCount: 7, next: null });

      const first = await deliveries({ pageSize: 3 });
      expect(first.response.status).toBe(200);
      expect(first.data).toMatchObject({ totalCount: 7, pageSize: 3 });
      expect(typeof first.data!.next).toBe("string");
      await send(2); // newer attempts: they belong before the first page, so they must not shift the pages after it
      await waitForHistory(world, app.id, hook.id, 9);
      const seen = [...first.data!.items];
      let next: string | null | undefined = first.data!.next;
      let pages = 1;
      while (next) {
        const res = await deliveries({ pageSize: 3, cursor: next });
        expect(res.response.status).toBe(200);
        expect(res.data!.totalCount).toBe(9);
        seen.push(...res.data!.items);
        next = res.data!.next;
        expect(++pages).toBeLessThan(10);
      }
      expect(seen.map((d) => d.attemptId)).toEqual(all.items.map((d) => d.attemptId));
      expect(pages).toBe(3);
    } finally {
      await receiver.close();
    }
  });

  it("X-ID-WH-6 `page` is bounded (page × pageSize ≤ 10000) and a cursor this list did not issue is refused, both 400 naming the parameter", async () => {
    const hook = await createWebhook(world, app.id, { url: "http://127.0.0.1:9/hook", events: ["user.created"] });
    const deepest = await (await admin()).GET("/api/applications/{appId}/webhooks/{webhookId}/deliveries", {
      params: { path: { appId: app.id, webhookId: hook.id }, query: { page: 500, pageSize: 20 } },
    });
    expect(deepest.data).toMatchObject({ items: [], page: 500, next: null });
    // Deeper than page × pageSize = 10000, and cursors this list did not issue: outside the contract.
    const path = `${base()}/${hook.id}/deliveries`;
    const deep = await raw("GET", `${path}?page=501&pageSize=20`);
    expect(deep.status).toBe(400);
    expect(deep.body).toMatchObject({ code: "validation_failed", errors: [{ field: "query.page" }] });
    for (const cursor of ["nope", Buffer.from('["x",1,"y"]').toString("base64url"), Buffer.from("{}").toString("base64url")]) {
      const bad = await raw("GET", `${path}?cursor=${cursor}`);
      expect(bad.status).toBe(400);
      expect(bad.body).toMatchObject({ code: "validation_failed", errors: [{ field: "query.cursor" }] });
    }
  });
});

describe("errors", () => {
  it("ID-WH-8 400 for a missing url, unknown or repeated events and out-of-range retry settings, in the Problem body", async () => {
    const bad: Array<Record<string, unknown>> = [
      { events: ["user.created"] },
      { url: "https://hooks.example.com/x", events: ["user.exploded"] },
      { url: "https://hooks.example.com/x", events: [] },
      { url: "https://hooks.example.com/x", events: ["user.created", "user.created"] },
      { url: "not a url", events: ["user.created"] },
      { url: "https://hooks.example.com/x", events: ["user.created"], maxRetries: -1 },
      { url: "https://hooks.example.com/x", events: ["user.created"], maxRetries: 11 },
      { url: "https://hooks.example.com/x", events: ["user.created"], retryDelaySeconds: 0 },
      { url: "https://hooks.example.com/x", events: ["user.created"], retryDelaySeconds: 3601 },
      { url: "https://hooks.example.com/x", events: ["user.created"], secret: "mine" },
    ];
    for (const body of bad) {
      const res = await raw("POST", base(), body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.headers.get("content-type")).toMatch(/^application\/problem\+json/);
      expect(res.body).toMatchObject({ status: 400, code: "validation_failed" });
      expect(res.body.errors.length).toBeGreaterThan(0);
    }
    const hook = await createWebhook(world, app.id, { url: "https://hooks.example.com/e", events: ["user.created"] });
    for (const body of [{ events: ["user.nope"] }, { maxRetries: 100 }, { url: "" }, { isActive: "yes" }]) {
      expect((await raw("PUT", `${base()}/${hook.id}`, body)).status, JSON.stringify(body)).toBe(400);
    }
  });

  it("ID-WH-8 401 without a token, with a forged one or an expired one", async (ctx) => {
    if (!world.target.clock) return skipOnDeployment(ctx, NEEDS.clock);
    const noToken = await request(world.url, "GET", base());
    expect(noToken.status).toBe(401);
    expect(noToken.headers.get("www-authenticate")).toMatch(/^Bearer/);
    expect(noToken.body.status).toBe(401);
    expect((await raw("GET", base(), undefined, "forged.token.value")).status).toBe(401);
    const fresh = await world.token();
    world.target.clock!.advance(3601_000);
    try {
      const expired = await raw("GET", base(), undefined, fresh);
      expect(expired.status).toBe(401);
      expect(expired.headers.get("www-authenticate")).toMatch(/invalid_token/);
    } finally {
      world.target.clock!.advance(-3601_000);
    }
  });

  it("ID-WH-8 403 for another organization's application, 404 for an unknown application or webhook", async () => {
    const foreign = await createApplication(world, await organizationWithToken(world.target));
    const hook = await createWebhook(world, app.id, { url: "https://hooks.example.com/f", events: ["user.created"] });
    const api = await admin();
    const body = { url: "https://hooks.example.com/f", events: ["user.created" as const] };
    const webhookId = hook.id;
    const theirs = { appId: foreign.id };
    const checks: Array<[string, () => Sent]> = [
      ["GET webhooks", () => api.GET("/api/applications/{appId}/webhooks", { params: { path: theirs } })],
      ["POST webhooks", () => api.POST("/api/applications/{appId}/webhooks", { params: { path: theirs }, body })],
      ["GET events", () => api.GET("/api/applications/{appId}/webhooks/events", { params: { path: theirs } })],
      [
        "PUT webhook",
        () =>
          api.PUT("/api/applications/{appId}/webhooks/{webhookId}", {
            params: { path: { ...theirs, webhookId } },
            body: { isActive: false },
          }),
      ],
      [
        "DELETE webhook",
        () => api.DELETE("/api/applications/{appId}/webhooks/{webhookId}", { params: { path: { ...theirs, webhookId } } }),
      ],
      [
        "POST regenerate-secret",
        () => api.POST("/api/applications/{appId}/webhooks/{webhookId}/regenerate-secret", { params: { path: { ...theirs, webhookId } } }),
      ],
      [
        "GET deliveries",
        () => api.GET("/api/applications/{appId}/webhooks/{webhookId}/deliveries", { params: { path: { ...theirs, webhookId } } }),
      ],
    ];
    for (const [what, send] of checks) {
      const res = await send();
      expect(res.response.status, what).toBe(403);
      expect(res.error).toMatchObject({ status: 403, code: "forbidden" });
    }
    const unknownApp = { appId: randomUUID() };
    const mine = (webhookId: string) => ({ appId: app.id, webhookId });
    const unknowns: Array<[string, () => Sent]> = [
      ["GET webhooks of an unknown application", () => api.GET("/api/applications/{appId}/webhooks", { params: { path: unknownApp } })],
      [
        "POST webhooks of an unknown application",
        () => api.POST("/api/applications/{appId}/webhooks", { params: { path: unknownApp }, body }),
      ],
      [
        "PUT unknown webhook",
        () =>
          api.PUT("/api/applications/{appId}/webhooks/{webhookId}", {
            params: { path: mine(randomUUID()) },
            body: { isActive: true },
          }),
      ],
      [
        "DELETE unknown webhook",
        () => api.DELETE("/api/applications/{appId}/webhooks/{webhookId}", { params: { path: mine(randomUUID()) } }),
      ],
      [
        "POST regenerate-secret of an unknown webhook",
        () => api.POST("/api/applications/{appId}/webhooks/{webhookId}/regenerate-secret", { params: { path: mine(randomUUID()) } }),
      ],
      [
        "GET deliveries of an unknown webhook",
        () => api.GET("/api/applications/{appId}/webhooks/{webhookId}/deliveries", { params: { path: mine(randomUUID()) } }),
      ],
      [
        "POST redeliver of an unknown delivery",
        () =>
          api.POST("/api/applications/{appId}/webhooks/{webhookId}/deliveries/{deliveryId}/redeliver", {
            params: { path: { ...mine(hook.id), deliveryId: randomUUID() } },
          }),
      ],
      [
        "POST test of an unknown webhook",
        () => api.POST("/api/applications/{appId}/webhooks/{webhookId}/test", { params: { path: mine(randomUUID()) } }),
      ],
    ];
    for (const [what, send] of unknowns) {
      const res = await send();
      expect(res.response.status, what).toBe(404);
      expect(res.error).toMatchObject({ status: 404, code: "not_found" });
    }
    // A webhook of another application of the same organization is not reachable through this one.
    const sibling = await createApplication(world);
    const viaSibling = await api.PUT("/api/applications/{appId}/webhooks/{webhookId}", {
      params: { path: { appId: sibling.id, webhookId } },
      body: { isActive: false },
    });
    expect(viaSibling.response.status).toBe(404);
  });
});
