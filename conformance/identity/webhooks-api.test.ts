/** ID-WH-1…3, ID-WH-5…8 and the API decisions X-ID-WH-1, X-ID-WH-5, X-ID-WH-6: the webhook management endpoints. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomUUID } from "node:crypto";
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
const base = () => `/api/applications/${app.id}/webhooks`;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[1-8][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

skipFileOnDeployment(identityOnDeployment(), NEEDS.webhookReceivers);
beforeAll(async () => {
  if (identityOnDeployment()) return;
  ({ app } = world = await webhookWorld());
});
afterAll(async () => world?.close());

const call = async (method: string, path: string, json?: unknown, token?: string) =>
  request(world.url, method, path, { token: token ?? (await world.token()), ...(json === undefined ? {} : { json }) });

describe("create and list", () => {
  it("ID-WH-1 POST needs url and events; maxRetries defaults to 3 and retryDelaySeconds to 60; the 201 carries every field and the secret", async () => {
    const res = await call("POST", base(), { url: "https://hooks.example.com/a", events: ["user.created"] });
    expect(res.status).toBe(201);
    expect(Object.keys(res.body).sort()).toEqual(
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
    expect(res.body.id).toMatch(UUID);
    expect(res.body).toMatchObject({
      organizationId: world.organizationId,
      applicationId: app.id,
      applicationName: app.name,
      url: "https://hooks.example.com/a",
      events: ["user.created"],
      isActive: true,
      maxRetries: 3,
      retryDelaySeconds: 60,
    });
    expect(res.body.createdAt).toMatch(ISO_UTC);
    expect(res.body.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);

    const custom = await call("POST", base(), {
      url: "https://hooks.example.com/b",
      events: ["user.deleted", "user.updated"],
      maxRetries: 0,
      retryDelaySeconds: 5,
    });
    expect(custom.status).toBe(201);
    expect(custom.body).toMatchObject({ maxRetries: 0, retryDelaySeconds: 5, events: ["user.deleted", "user.updated"] });
    expect(custom.body.secret).not.toBe(res.body.secret);

    for (const body of [{ events: ["user.created"] }, { url: "https://hooks.example.com/c" }]) {
      const bad = await call("POST", base(), body);
      expect(bad.status).toBe(400);
      expect(bad.body.code).toBe("validation_failed");
    }
  });

  it("ID-WH-2 GET lists the application's webhooks (oldest first, X-ID-WH-5), without secrets, and only this application's", async () => {
    const other = await createApplication(world);
    await createWebhook(world, other.id, { url: "https://hooks.example.com/other", events: ["user.created"] });
    const first = await createWebhook(world, app.id, { url: "https://hooks.example.com/list-1", events: ["user.created"] });
    const second = await createWebhook(world, app.id, { url: "https://hooks.example.com/list-2", events: ["user.updated"] });
    const res = await call("GET", `${base()}?pageSize=100`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ page: 1, pageSize: 100 });
    const ids = res.body.items.map((w: any) => w.id);
    expect(ids).toContain(first.id);
    expect(ids.indexOf(first.id)).toBeLessThan(ids.indexOf(second.id));
    expect(res.body.totalCount).toBe(res.body.items.length);
    for (const w of res.body.items) {
      expect(w.applicationId).toBe(app.id);
      expect(w).not.toHaveProperty("secret");
    }
    const paged = await call("GET", `${base()}?page=1&pageSize=1`);
    expect(paged.body.items).toHaveLength(1);
    expect(paged.body.totalCount).toBe(res.body.totalCount);
  });

  it("X-ID-WH-5 webhooks are listed oldest first", async (ctx) => {
    if (!world.target.clock) return skipOnDeployment(ctx, NEEDS.clock);
    const fresh = await createApplication(world);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      ids.push((await createWebhook(world, fresh.id, { url: `https://hooks.example.com/order-${i}`, events: ["user.created"] })).id);
      world.target.clock!.advance(1000);
    }
    const res = await call("GET", `/api/applications/${fresh.id}/webhooks`);
    expect(res.body.items.map((w: any) => w.id)).toEqual(ids);
    expect(res.body.totalCount).toBe(3);
  });

  it("ID-WH-7 GET …/webhooks/events lists user.created, user.updated and user.deleted", async () => {
    const res = await call("GET", `${base()}/events`);
    expect(res.status).toBe(200);
    expect(res.body.items.map((i: any) => i.event)).toEqual(["user.created", "user.updated", "user.deleted"]);
    for (const item of res.body.items) expect(item.description).toEqual(expect.any(String));
  });
});

describe("update, regenerate, delete", () => {
  it("ID-WH-3 PUT updates any of url, events, isActive, maxRetries, retryDelaySeconds; absent fields stay; isActive takes the given value", async () => {
    const hook = await createWebhook(world, app.id, { url: "https://hooks.example.com/u", events: ["user.created"] });
    const path = `${base()}/${hook.id}`;
    const steps: Array<[Record<string, unknown>, Record<string, unknown>]> = [
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
      const res = await call("PUT", path, body);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ id: hook.id, ...expected });
      expect(res.body).not.toHaveProperty("secret");
      const listed = (await call("GET", `${base()}?pageSize=100`)).body.items.find((w: any) => w.id === hook.id);
      expect(listed).toMatchObject(expected);
    }
  });

  it("ID-WH-5 regenerate-secret returns { secret }, a new one each time (previousSecretExpiresAt null without overlap)", async () => {
    const hook = await createWebhook(world, app.id, { url: "https://hooks.example.com/r", events: ["user.created"] });
    const res = await call("POST", `${base()}/${hook.id}/regenerate-secret`);
    expect(res.status).toBe(200);
    expect(res.body.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(res.body.secret).not.toBe(hook.secret);
    expect(res.body.previousSecretExpiresAt).toBeNull();
    const overlap = await call("POST", `${base()}/${hook.id}/regenerate-secret`, { overlapSeconds: 600 });
    expect(overlap.status).toBe(200);
    expect(Date.parse(overlap.body.previousSecretExpiresAt) - Date.now()).toBeGreaterThan(500_000);
  });

  it("ID-WH-4 DELETE removes the webhook: 204, then 404 and gone from the list", async () => {
    const hook = await createWebhook(world, app.id, { url: "https://hooks.example.com/d", events: ["user.created"] });
    const res = await call("DELETE", `${base()}/${hook.id}`);
    expect(res.status).toBe(204);
    expect((await call("DELETE", `${base()}/${hook.id}`)).status).toBe(404);
    expect((await call("PUT", `${base()}/${hook.id}`, { isActive: true })).status).toBe(404);
    expect((await call("GET", `${base()}?pageSize=100`)).body.items.map((w: any) => w.id)).not.toContain(hook.id);
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
      const path = `${base()}/${hook.id}/deliveries`;
      const all = await call("GET", `${path}?page=1&pageSize=100`);
      expect(all.status).toBe(200);
      expect(all.body).toMatchObject({ totalCount: 5, page: 1, pageSize: 100 });
      const times = all.body.items.map((d: any) => Date.parse(d.deliveredAt));
      expect([...times].sort((a, b) => b - a)).toEqual(times);
      for (const d of all.body.items) {
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
      expect(all.body.items[0].id).toBe(receiver.received[4]!.json.id);

      const page2 = await call("GET", `${path}?page=2&pageSize=2`);
      expect(page2.body).toMatchObject({ totalCount: 5, page: 2, pageSize: 2 });
      expect(page2.body.items.map((d: any) => d.attemptId)).toEqual(all.body.items.slice(2, 4).map((d: any) => d.attemptId));
      const past = await call("GET", `${path}?page=9&pageSize=2`);
      expect(past.body).toMatchObject({ items: [], totalCount: 5, page: 9 });
      const defaults = await call("GET", path);
      expect(defaults.body).toMatchObject({ page: 1, pageSize: 20 });
      for (const q of ["page=0", "pageSize=0", "pageSize=101", "page=x"]) expect((await call("GET", `${path}?${q}`)).status).toBe(400);
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
      const path = `${base()}/${hook.id}/deliveries`;
      const all = (await call("GET", `${path}?pageSize=100`)).body;
      expect(all).toMatchObject({ totalCount: 7, next: null });

      const first = await call("GET", `${path}?pageSize=3`);
      expect(first.status).toBe(200);
      expect(first.body).toMatchObject({ totalCount: 7, pageSize: 3 });
      expect(typeof first.body.next).toBe("string");
      await send(2); // newer attempts: they belong before the first page, so they must not shift the pages after it
      await waitForHistory(world, app.id, hook.id, 9);
      const seen = [...first.body.items];
      let next: string | null = first.body.next;
      let pages = 1;
      while (next) {
        const res = await call("GET", `${path}?pageSize=3&cursor=${encodeURIComponent(next)}`);
        expect(res.status).toBe(200);
        expect(res.body.totalCount).toBe(9);
        seen.push(...res.body.items);
        next = res.body.next;
        expect(++pages).toBeLessThan(10);
      }
      expect(seen.map((d: any) => d.attemptId)).toEqual(all.items.map((d: any) => d.attemptId));
      expect(pages).toBe(3);
    } finally {
      await receiver.close();
    }
  });

  it("X-ID-WH-6 `page` is bounded (page × pageSize ≤ 10000) and a cursor this list did not issue is refused, both 400 naming the parameter", async () => {
    const hook = await createWebhook(world, app.id, { url: "http://127.0.0.1:9/hook", events: ["user.created"] });
    const path = `${base()}/${hook.id}/deliveries`;
    expect((await call("GET", `${path}?page=500&pageSize=20`)).body).toMatchObject({ items: [], page: 500, next: null });
    const deep = await call("GET", `${path}?page=501&pageSize=20`);
    expect(deep.status).toBe(400);
    expect(deep.body).toMatchObject({ code: "validation_failed", errors: [{ field: "query.page" }] });
    for (const cursor of ["nope", Buffer.from('["x",1,"y"]').toString("base64url"), Buffer.from("{}").toString("base64url")]) {
      const bad = await call("GET", `${path}?cursor=${cursor}`);
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
      const res = await call("POST", base(), body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.headers.get("content-type")).toMatch(/^application\/problem\+json/);
      expect(res.body).toMatchObject({ status: 400, code: "validation_failed" });
      expect(res.body.errors.length).toBeGreaterThan(0);
    }
    const hook = await createWebhook(world, app.id, { url: "https://hooks.example.com/e", events: ["user.created"] });
    for (const body of [{ events: ["user.nope"] }, { maxRetries: 100 }, { url: "" }, { isActive: "yes" }]) {
      expect((await call("PUT", `${base()}/${hook.id}`, body)).status, JSON.stringify(body)).toBe(400);
    }
  });

  it("ID-WH-8 401 without a token, with a forged one or an expired one", async (ctx) => {
    if (!world.target.clock) return skipOnDeployment(ctx, NEEDS.clock);
    const noToken = await request(world.url, "GET", base());
    expect(noToken.status).toBe(401);
    expect(noToken.headers.get("www-authenticate")).toMatch(/^Bearer/);
    expect(noToken.body.status).toBe(401);
    expect((await call("GET", base(), undefined, "forged.token.value")).status).toBe(401);
    const fresh = await world.token();
    world.target.clock!.advance(3601_000);
    try {
      const expired = await call("GET", base(), undefined, fresh);
      expect(expired.status).toBe(401);
      expect(expired.headers.get("www-authenticate")).toMatch(/invalid_token/);
    } finally {
      world.target.clock!.advance(-3601_000);
    }
  });

  it("ID-WH-8 403 for another organization's application, 404 for an unknown application or webhook", async () => {
    const foreign = await createApplication(world, await organizationWithToken(world.target));
    const foreignBase = `/api/applications/${foreign.id}/webhooks`;
    const hook = await createWebhook(world, app.id, { url: "https://hooks.example.com/f", events: ["user.created"] });
    const checks: Array<[string, string, unknown?]> = [
      ["GET", foreignBase],
      ["POST", foreignBase, { url: "https://hooks.example.com/f", events: ["user.created"] }],
      ["GET", `${foreignBase}/events`],
      ["PUT", `${foreignBase}/${hook.id}`, { isActive: false }],
      ["DELETE", `${foreignBase}/${hook.id}`],
      ["POST", `${foreignBase}/${hook.id}/regenerate-secret`],
      ["GET", `${foreignBase}/${hook.id}/deliveries`],
    ];
    for (const [method, path, body] of checks) {
      const res = await call(method, path, body);
      expect(res.status, `${method} ${path}`).toBe(403);
      expect(res.body).toMatchObject({ status: 403, code: "forbidden" });
    }
    const unknownApp = `/api/applications/${randomUUID()}/webhooks`;
    for (const [method, path, body] of [
      ["GET", unknownApp],
      ["POST", unknownApp, { url: "https://hooks.example.com/f", events: ["user.created"] }],
      ["PUT", `${base()}/${randomUUID()}`, { isActive: true }],
      ["DELETE", `${base()}/${randomUUID()}`],
      ["POST", `${base()}/${randomUUID()}/regenerate-secret`],
      ["GET", `${base()}/${randomUUID()}/deliveries`],
      ["POST", `${base()}/${hook.id}/deliveries/${randomUUID()}/redeliver`],
      ["POST", `${base()}/${randomUUID()}/test`],
    ] as Array<[string, string, unknown?]>) {
      const res = await call(method, path, body);
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(res.body).toMatchObject({ status: 404, code: "not_found" });
    }
    // A webhook of another application of the same organization is not reachable through this one.
    const sibling = await createApplication(world);
    expect((await call("PUT", `/api/applications/${sibling.id}/webhooks/${hook.id}`, { isActive: false })).status).toBe(404);
  });
});
