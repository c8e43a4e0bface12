/**
 * X-ID-AUD-1..5: the audit log. Sign-ins, failures, sign-outs and admin changes are recorded with
 * who, whom and from where (never a password); an event is written in its change's transaction;
 * an organization's admins see their organization's events only; the list pages by cursor and
 * filters; old events are purged on the service's clock.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { components } from "../../generated/sdk/types/identity.ts";
import { expectStatus } from "../harness/api.ts";
import { adminToken, createApp, createUser, newApplication, type Organization, type TestApp } from "../harness/identity-fixtures.ts";
import { authorizeWithPassword, Browser, formFields, loginForm, authorizationPath, pkcePair } from "../harness/oauth-flow.ts";
import { NEEDS, skipOnDeployment } from "../harness/skip.ts";
import { identityWorld, type TestUser } from "../harness/worlds.ts";
import type { IdentityTarget } from "../harness/targets.ts";
import type { IdentityApi } from "../harness/api.ts";

type AuditQuery =
  NonNullable<NonNullable<Parameters<IdentityApi["GET"]>[1]>["params"]> extends infer P
    ? P extends { query?: infer Q }
      ? Q
      : never
    : never;
type AuditEvent = components["schemas"]["AuditEvent"];

let target: IdentityTarget;
let api: (token?: string) => IdentityApi;
let organization: Organization;
let organizationId: string;
let app: TestApp;
let user: TestUser;

beforeAll(async () => {
  const world = await identityWorld({ admin: true });
  ({ target } = world);
  api = (bearer) => world.api(bearer);
  organization = world.organization;
  organizationId = organization.organizationId;
  app = await createApp(target, { organizationId });
  user = await createUser(target);
});
afterAll(async () => target?.close());

/** The admin's view of the log with `query` (200 expected). */
async function audit(query: Record<string, unknown> = {}, token?: string) {
  return expectStatus(api(token).GET("/api/audit-events", { params: { query: query as AuditQuery } }), 200, "GET /api/audit-events");
}

/** The login page of a fresh authorization request of `app`, in `browser`. */
async function loginPage(browser: Browser) {
  const { challenge } = pkcePair();
  const start = await browser.get(
    authorizationPath({ clientId: app.clientId, redirectUri: app.redirectUri, state: "s", challenge, method: "S256", scope: "openid" }),
  );
  expect(start.status).toBe(200);
  return formFields(start.text);
}

describe("audit log: what is recorded", () => {
  it("X-ID-AUD-1 a failed and a successful password sign-in are recorded with the user, application, address and User-Agent, never the password", async () => {
    const browser = new Browser(target.url);
    const wrong = "not-the-password-123";
    const failed = await browser.post("/oauth/authorize", loginForm(await loginPage(browser), { email: user.email, password: wrong }));
    expect(failed.status).toBe(400);
    await authorizeWithPassword(target.url, {
      clientId: app.clientId,
      redirectUri: app.redirectUri,
      email: user.email,
      password: user.password,
      browser,
    });

    const page = await audit({ userId: user.id });
    const types = page.items.map((e) => e.type);
    expect(types).toContain("user.signed_in");
    expect(types).toContain("user.sign_in_failed");
    const failure = page.items.find((e) => e.type === "user.sign_in_failed")!;
    expect(failure).toMatchObject({
      actor: { type: "user", id: null },
      userId: user.id,
      applicationId: app.id,
      details: { method: "password", reason: "invalid_credentials", email: user.email },
    });
    expect(failure.clientAddress).toBeTruthy();
    const success = page.items.find((e) => e.type === "user.signed_in")!;
    expect(success).toMatchObject({ actor: { type: "user", id: user.id }, applicationId: app.id, details: { method: "password" } });
    const text = JSON.stringify(page);
    expect(text).not.toContain(wrong);
    expect(text).not.toContain(user.password);
  });

  it("X-ID-AUD-1 an admin's application changes are recorded with the admin as actor", async () => {
    const created = await expectStatus(api().POST("/api/applications", { body: newApplication() }), 201, "create");
    await expectStatus(
      api().PATCH("/api/applications/{appId}", { params: { path: { appId: created.id } }, body: { name: "Renamed" } }),
      200,
      "update",
    );
    await expectStatus(api().DELETE("/api/applications/{appId}", { params: { path: { appId: created.id } } }), 204, "delete");
    const page = await audit({ applicationId: created.id });
    expect(page.items.map((e) => e.type)).toEqual(["application.deleted", "application.updated", "application.created"]);
    for (const e of page.items) expect(e.actor.type).toBe("admin");
    expect(page.items[1]!.details).toMatchObject({ changedFields: ["name"] });
    expect(JSON.stringify(page)).not.toMatch(/cs_[A-Za-z0-9_-]{20,}/);
  });
});

describe("audit log: recorded with the change", () => {
  it("X-ID-AUD-2 an event recorded in a transaction that rolls back is not in the log; one that commits is", async (ctx) => {
    if (!target.service) return skipOnDeployment(ctx, NEEDS.service);
    const { storage, audit: log } = target.service.ctx;
    const entry = (marker: string) => ({
      type: "user.updated" as const,
      actor: { type: "user" as const, id: user.id },
      userId: user.id,
      applicationId: app.id,
      details: { changedFields: [marker] },
    });
    await expect(
      storage.transaction(async (trx) => {
        await log.record(trx, entry("rolled-back"));
        throw new Error("the change failed");
      }),
    ).rejects.toThrow("the change failed");
    await storage.transaction((trx) => log.record(trx, entry("committed")));
    const page = await audit({ userId: user.id, type: "user.updated" });
    const fields = page.items.map((e) => (e.details as { changedFields: string[] }).changedFields[0]);
    expect(fields).toContain("committed");
    expect(fields).not.toContain("rolled-back");
  });
});

describe("audit log: who sees what", () => {
  it("X-ID-AUD-3 the admin of another organization sees nothing of this one", async (ctx) => {
    if (!target.createOrganization || target.external) return skipOnDeployment(ctx, NEEDS.organizations);
    const other = await target.createOrganization();
    const otherToken = await adminToken(target, other);
    expect((await audit({}, undefined)).items.length).toBeGreaterThan(0);
    const seen = await audit({ userId: user.id }, otherToken);
    expect(seen.items).toEqual([]);
    expect(seen.totalCount).toBe(0);
    expect((await audit({ applicationId: app.id }, otherToken)).items).toEqual([]);
  });

  it("X-ID-AUD-3 the list needs an admin's dashboard token (401 without one)", async () => {
    const { response } = await api("").GET("/api/audit-events", {});
    expect(response.status).toBe(401);
  });
});

describe("audit log: paging and filters", () => {
  it("X-ID-AUD-4 pages newest first by cursor, filtered by type, application and time", async () => {
    const made: string[] = [];
    for (let i = 0; i < 3; i++)
      made.push((await expectStatus(api().POST("/api/applications", { body: newApplication() }), 201, "create")).id);
    // Against a deployment, other files' tests create applications in the same organization at the
    // same time: the pages are walked until all three are seen, and their order among the rest checked.
    const first = await audit({ type: "application.created", pageSize: 2 });
    expect(first.items).toHaveLength(2);
    expect(first.next).toBeTruthy();
    const all: AuditEvent[] = [];
    for (let page = first, pages = 1; ; pages++) {
      all.push(...page.items);
      const seenAll = made.every((id) => all.some((e) => e.applicationId === id));
      if (seenAll || !page.next || pages === 50) break;
      page = await audit({ type: "application.created", pageSize: 2, cursor: page.next });
    }
    expect(new Set(all.map((e) => e.id)).size).toBe(all.length);
    for (const e of all) expect(e.type).toBe("application.created");
    // Newest first: the three in the reverse of their making, and no event older than one after it.
    const positions = made.map((id) => all.findIndex((e) => e.applicationId === id));
    expect(positions.every((at) => at >= 0)).toBe(true);
    expect(positions[2]).toBeLessThan(positions[1]!);
    expect(positions[1]).toBeLessThan(positions[0]!);
    for (let i = 1; i < all.length; i++) expect(Date.parse(all[i]!.occurredAt)).toBeLessThanOrEqual(Date.parse(all[i - 1]!.occurredAt));

    const one = await audit({ applicationId: made[1] });
    expect(one.items.map((e: AuditEvent) => e.applicationId)).toEqual([made[1]]);
    expect(one.totalCount).toBe(1);
    const at = all[positions[2]!]!.occurredAt;
    const later = new Date(Date.parse(at) + 1).toISOString();
    expect((await audit({ applicationId: made[2], since: later })).items).toEqual([]);
    expect((await audit({ applicationId: made[2], until: later })).items).toHaveLength(1);
    expect((await audit({ applicationId: made[2], until: at })).items).toEqual([]);
  });

  it("X-ID-AUD-4 a cursor not from this list is 400 validation_failed naming query.cursor", async () => {
    const { response, error } = await api().GET("/api/audit-events", { params: { query: { cursor: "not-a-cursor" } } });
    expect(response.status).toBe(400);
    expect(error).toMatchObject({ code: "validation_failed", errors: [{ field: "query.cursor" }] });
  });
});

describe("audit log: retention", () => {
  it("X-ID-AUD-5 events are purged 90 days after they happened, on the service's clock", async (ctx) => {
    if (!target.clock || !target.service) return skipOnDeployment(ctx, NEEDS.clock);
    const created = await expectStatus(api().POST("/api/applications", { body: newApplication() }), 201, "create");
    target.clock.advance((90 * 24 * 3600 - 3600) * 1000);
    await target.service.purge();
    // The admin's token of the world expired as the clock moved: a new one each time.
    expect((await audit({ applicationId: created.id }, await adminToken(target, organization))).items).toHaveLength(1);
    target.clock.advance(2 * 3600 * 1000);
    await target.service.purge();
    expect((await audit({ applicationId: created.id }, await adminToken(target, organization))).items).toEqual([]);
  });
});
