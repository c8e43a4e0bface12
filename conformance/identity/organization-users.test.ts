/**
 * The organization's users, as its admins manage them (X-ID-UADM-1..6): who they are, paging and
 * search, what an admin sees, disabling and enabling for the organization (sign-in refused with a
 * page, tokens ended at once at every endpoint), not oneself, deleting. Organizations stay apart:
 * another organization's admin sees none of it, and nothing one organization does locks an
 * account out of another's applications.
 */
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bearer, identityApi, type IdentityApi } from "../harness/api.ts";
import { request } from "../harness/http.ts";
import { adminToken, createApp, createUser, type Organization, type TestApp } from "../harness/identity-fixtures.ts";
import {
  authorizationPath,
  authorizeWithPassword,
  Browser,
  exchangeCode,
  formFields,
  loginForm,
  pkcePair,
  tokenRequest,
} from "../harness/oauth-flow.ts";
import { NEEDS, skipOnDeployment } from "../harness/skip.ts";
import { identityTarget, type IdentityTarget } from "../harness/targets.ts";

let t: IdentityTarget;
let api: IdentityApi;
beforeAll(async () => {
  t = await identityTarget();
  api = identityApi(t);
});
afterAll(async () => t?.close());

type User = { id: string; email: string; password: string };
const SCOPE = "openid profile email offline_access";
const USERS = "/api/organizations/current/users";
const ONE = "/api/organizations/current/users/{userId}";

/** A fresh organization with one application and its admin's dashboard token. */
async function organization(): Promise<{ org: Organization; app: TestApp; admin: string }> {
  const org = await t.createOrganization!();
  const app = await createApp(t, { organizationId: org.organizationId });
  return { org, app, admin: await adminToken(t, org) };
}

/** Signs the user in to the application through the hosted form and exchanges the code. */
async function tokensFor(app: TestApp, user: User, browser?: Browser) {
  const flow = await authorizeWithPassword(t.url, {
    clientId: app.clientId,
    redirectUri: app.redirectUri,
    email: user.email,
    password: user.password,
    scope: SCOPE,
    ...(browser ? { browser } : {}),
  });
  const res = await exchangeCode(t.url, flow, { clientId: app.clientId, redirectUri: app.redirectUri, clientSecret: app.clientSecret! });
  expect(res.status).toBe(200);
  return { ...(res.json as { access_token: string; refresh_token: string }), browser: flow.browser };
}

/** A user of the application (signed in to it once), with their tokens. */
async function memberOf(app: TestApp, names: { firstName?: string; lastName?: string } = {}) {
  const user = await createUser(t, names);
  return { user, tokens: await tokensFor(app, user) };
}

/** The hosted login page for the application, then the login form posted with `password`. */
async function signInPage(app: TestApp, user: User, password = user.password, browser = new Browser(t.url)) {
  const start = await browser.get(
    authorizationPath({
      clientId: app.clientId,
      redirectUri: app.redirectUri,
      scope: SCOPE,
      challenge: pkcePair().challenge,
      method: "S256",
    }),
  );
  expect(start.status).toBe(200);
  return browser.post("/oauth/authorize", loginForm(formFields(start.text), { email: user.email, password }));
}

const path = (userId: string) => ({ params: { path: { userId } } });
const disable = (admin: string, userId: string) => api.POST(`${ONE}/disable`, { ...path(userId), ...bearer(admin) });
const enable = (admin: string, userId: string) => api.POST(`${ONE}/enable`, { ...path(userId), ...bearer(admin) });
const remove = (admin: string, userId: string) => api.DELETE(ONE, { ...path(userId), ...bearer(admin) });
const get = (admin: string, userId: string) => api.GET(ONE, { ...path(userId), ...bearer(admin) });

const clientAuth = (a: TestApp) => ({ client_id: a.clientId, client_secret: a.clientSecret! });
const refresh = (a: TestApp, token: string) => tokenRequest(t.url, { grant_type: "refresh_token", refresh_token: token, ...clientAuth(a) });
const introspect = (a: TestApp, token: string) => tokenRequest(t.url, { token, ...clientAuth(a) }, undefined, "/oauth/introspect");

/** The access token is refused at userinfo and /api/users/me and inactive at introspection; the refresh token is invalid_grant. */
async function expectEnded(app: TestApp, tokens: { access_token: string; refresh_token: string }) {
  // Raw requests, on purpose: the tokens no longer work.
  expect((await request(t.url, "GET", "/oauth/userinfo", { token: tokens.access_token })).status).toBe(401);
  expect((await request(t.url, "GET", "/api/users/me", { token: tokens.access_token })).status).toBe(401);
  expect((await introspect(app, tokens.access_token)).json).toEqual({ active: false });
  const r = await refresh(app, tokens.refresh_token);
  expect(r.status).toBe(400);
  expect(r.json.error).toBe("invalid_grant");
}

async function expectLive(app: TestApp, tokens: { access_token: string; refresh_token: string }) {
  expect((await api.GET("/oauth/userinfo", bearer(tokens.access_token))).response.status).toBe(200);
  expect((await introspect(app, tokens.access_token)).json.active).toBe(true);
}

describe("X-ID-UADM-1 who the organization's users are", () => {
  it("X-ID-UADM-1 the list holds the users of the organization's applications and its admins, newest first, paged", async (ctx) => {
    if (t.external) return skipOnDeployment(ctx, NEEDS.organizations);
    const { org, app, admin } = await organization();
    const members = [];
    for (let i = 0; i < 3; i++) members.push((await memberOf(app)).user);
    await createUser(t); // an account that never used the organization's applications

    const first = await api.GET(USERS, { params: { query: { page: 1, pageSize: 2 } }, ...bearer(admin) });
    expect(first.response.status).toBe(200);
    expect(first.data).toMatchObject({ totalCount: 4, page: 1, pageSize: 2 });
    const second = await api.GET(USERS, { params: { query: { page: 2, pageSize: 2 } }, ...bearer(admin) });
    const ids = [...first.data!.items, ...second.data!.items].map((u) => u.id);
    expect(ids).toHaveLength(4);
    expect(new Set(ids)).toEqual(new Set([...members.map((m) => m.id), org.admin.userId]));
    // Newest account first: the admin's account was made before the members'.
    expect(ids.at(-1)).toBe(org.admin.userId);
    expect(second.data!.items.at(-1)).toMatchObject({ admin: true, enabled: true });
    const past = await api.GET(USERS, { params: { query: { page: 3, pageSize: 2 } }, ...bearer(admin) });
    expect(past.data).toMatchObject({ items: [], totalCount: 4, page: 3 });
  });

  it("X-ID-UADM-1 q keeps the users whose email, first name or last name starts with it, in any case; % and _ are literal", async () => {
    const { app, admin } = await organization();
    const tag = randomBytes(3).toString("hex");
    const ada = (await memberOf(app, { firstName: `Ada${tag}`, lastName: "Lovelace" })).user;
    const grace = (await memberOf(app, { firstName: "Grace", lastName: `Hopper${tag}` })).user;
    const search = async (q: string) =>
      (await api.GET(USERS, { params: { query: { q } }, ...bearer(admin) })).data!.items.map((u) => u.id).sort();
    expect(await search(`ada${tag}`.toUpperCase())).toEqual([ada.id]);
    expect(await search(`hopper${tag}`)).toEqual([grace.id]);
    expect(await search(ada.email.slice(0, 8))).toContain(ada.id);
    expect(await search("%")).toEqual([]);
    expect(await search("_")).toEqual([]);
  });

  it("X-ID-UADM-1 another organization's admin sees none of them: 404 for each, as for an unknown id, and nothing changes", async (ctx) => {
    if (t.external) return skipOnDeployment(ctx, NEEDS.organizations);
    const a = await organization();
    const b = await organization();
    const { user, tokens } = await memberOf(a.app);
    const list = await api.GET(USERS, { params: { query: { q: user.email } }, ...bearer(b.admin) });
    expect(list.data).toMatchObject({ items: [], totalCount: 0 });
    for (const res of [
      await get(b.admin, user.id),
      await disable(b.admin, user.id),
      await enable(b.admin, user.id),
      await remove(b.admin, user.id),
    ]) {
      expect(res.response.status).toBe(404);
      expect(res.error).toMatchObject({ code: "not_found" });
    }
    expect((await get(b.admin, a.org.admin.userId)).response.status).toBe(404);
    const unknown = await get(b.admin, "11111111-2222-4333-8444-555555555555");
    expect(unknown.error).toEqual((await get(b.admin, user.id)).error);
    await expectLive(a.app, tokens);
    expect((await get(a.admin, user.id)).data).toMatchObject({ enabled: true });
  });

  it("X-ID-UADM-1 without an admin token the operations are 401, a user who administers nothing is 403 not_an_admin, a bad query 400", async () => {
    const { app, admin } = await organization();
    const { user } = await memberOf(app);
    expect((await request(t.url, "GET", USERS)).status).toBe(401);
    expect((await request(t.url, "GET", `${USERS}/${user.id}`, { token: "not-a-token" })).status).toBe(401);
    const dashboard = await adminToken(t, { organizationId: "", admin: { ...user, userId: user.id } });
    const res = await api.GET(USERS, bearer(dashboard));
    expect(res.response.status).toBe(403);
    expect(res.error).toMatchObject({ code: "not_an_admin" });
    expect((await request(t.url, "GET", `${USERS}?pageSize=0`, { token: admin })).status).toBe(400);
    expect((await request(t.url, "GET", `${USERS}/not-a-uuid`, { token: admin })).status).toBe(400);
  });
});

describe("X-ID-UADM-2 what an admin sees of a user", () => {
  it("X-ID-UADM-2 profile, creation, last sign-in to the organization's applications, its applications they use, enabled, admin", async () => {
    const { org, app, admin } = await organization();
    const other = await createApp(t, { organizationId: org.organizationId });
    const { user } = await memberOf(app, { firstName: "Ada", lastName: "Lovelace" });
    const res = await get(admin, user.id);
    expect(res.response.status).toBe(200);
    expect(res.data).toEqual({
      id: user.id,
      email: user.email,
      firstName: "Ada",
      lastName: "Lovelace",
      emailVerified: false,
      createdAt: expect.any(String),
      lastSignInAt: expect.any(String),
      enabled: true,
      admin: false,
      applications: [{ id: app.id, name: app.name }],
    });
    expect(JSON.stringify(res.data)).not.toMatch(/password|hash/i);
    expect(res.data!.applications.map((a) => a.id)).not.toContain(other.id);
    const adminView = await get(admin, org.admin.userId);
    expect(adminView.data).toMatchObject({ admin: true, applications: [], lastSignInAt: null });
  });
});

describe("X-ID-UADM-3 disabling is for the organization", () => {
  it("X-ID-UADM-3 a disabled user's access and refresh tokens end at once at every endpoint; the answer says enabled false", async () => {
    const { app, admin } = await organization();
    const { user, tokens } = await memberOf(app);
    await expectLive(app, tokens);
    const res = await disable(admin, user.id);
    expect(res.response.status).toBe(200);
    expect(res.data).toMatchObject({ id: user.id, enabled: false });
    await expectEnded(app, tokens);
    // Again is a no-op.
    expect((await disable(admin, user.id)).data).toMatchObject({ enabled: false });
  });

  it("X-ID-UADM-3 a disabled user cannot sign in: the right password gets the branded 403 page, a wrong one the usual page (X-ID-USR-2)", async () => {
    const { org, admin } = await organization();
    const app = await createApp(t, { organizationId: org.organizationId, name: "Acme Notes", branding: { primaryColor: "#123456" } });
    const { user } = await memberOf(app);
    await disable(admin, user.id);
    const right = await signInPage(app, user);
    expect(right.status).toBe(403);
    expect(right.text).toContain("Your account is disabled");
    expect(right.text).toContain("Acme Notes");
    expect(right.text).toContain("#123456");
    expect(right.location).toBeUndefined();
    const wrong = await signInPage(app, user, "not-the-password");
    const unknown = await signInPage(app, { ...user, email: `nobody-${randomBytes(4).toString("hex")}@example.com` }, "not-the-password");
    expect(wrong.status).toBe(400);
    expect(wrong.text).toContain("The email or password is wrong.");
    expect(wrong.status).toBe(unknown.status);
    expect(wrong.text).not.toContain("disabled");
  });

  it("X-ID-UADM-3 a single sign-on session no longer signs a disabled user in to the organization's applications", async () => {
    const { app, admin } = await organization();
    const { user, tokens } = await memberOf(app);
    await disable(admin, user.id);
    // The browser that signed in still holds its session: it gets the login page, not a code.
    const again = await tokens.browser.get(
      authorizationPath({
        clientId: app.clientId,
        redirectUri: app.redirectUri,
        scope: SCOPE,
        challenge: pkcePair().challenge,
        method: "S256",
      }),
    );
    expect(again.status).toBe(200);
    expect(again.text).toContain('name="password"');
  });

  it("X-ID-UADM-3 the account keeps signing in to another organization's applications; its tokens there stay live", async (ctx) => {
    if (t.external) return skipOnDeployment(ctx, NEEDS.organizations);
    const a = await organization();
    const b = await organization();
    const { user, tokens } = await memberOf(a.app);
    const atB = await tokensFor(b.app, user);
    expect((await disable(a.admin, user.id)).response.status).toBe(200);
    await expectEnded(a.app, tokens);
    await expectLive(b.app, atB);
    await tokensFor(b.app, user);
    expect((await get(b.admin, user.id)).data).toMatchObject({ enabled: true });
  });

  it("X-ID-UADM-3 a disabled admin administers the organization no more: their dashboard token is 403 not_an_admin", async (ctx) => {
    if (t.external) return skipOnDeployment(ctx, NEEDS.organizations);
    const { org, app, admin } = await organization();
    const { user } = await memberOf(app);
    await t.service!.ctx.storage.organizations.addAdmin(org.organizationId, user.id, new Date().toISOString());
    const second = await adminToken(t, { organizationId: org.organizationId, admin: { ...user, userId: user.id } });
    expect((await api.GET(USERS, bearer(second))).response.status).toBe(200);
    expect((await disable(admin, user.id)).data).toMatchObject({ admin: true, enabled: false });
    const after = await api.GET(USERS, bearer(second));
    expect(after.response.status).toBe(403);
    expect(after.error).toMatchObject({ code: "not_an_admin" });
  });
});

describe("X-ID-UADM-4 enabling", () => {
  it("X-ID-UADM-4 enabling restores sign-in with new tokens; what disabling ended stays ended", async () => {
    const { app, admin } = await organization();
    const { user, tokens } = await memberOf(app);
    await disable(admin, user.id);
    const res = await enable(admin, user.id);
    expect(res.response.status).toBe(200);
    expect(res.data).toMatchObject({ enabled: true });
    await expectEnded(app, tokens);
    const fresh = await tokensFor(app, user);
    await expectLive(app, fresh);
    expect((await enable(admin, user.id)).data).toMatchObject({ enabled: true });
  });
});

describe("X-ID-UADM-5 not oneself", () => {
  it("X-ID-UADM-5 an admin can neither disable nor delete their own account: 409 own_account, nothing changes", async () => {
    const { org, admin } = await organization();
    for (const res of [await disable(admin, org.admin.userId), await remove(admin, org.admin.userId)]) {
      expect(res.response.status).toBe(409);
      expect(res.error).toMatchObject({ status: 409, code: "own_account" });
    }
    expect((await get(admin, org.admin.userId)).data).toMatchObject({ enabled: true, admin: true });
  });
});

describe("X-ID-UADM-6 deleting", () => {
  it("X-ID-UADM-6 an account only this organization has is deleted: its tokens end, it signs in nowhere, it is 404 after", async () => {
    const { app, admin } = await organization();
    const { user, tokens } = await memberOf(app);
    const res = await remove(admin, user.id);
    expect(res.response.status).toBe(204);
    await expectEnded(app, tokens);
    expect((await get(admin, user.id)).response.status).toBe(404);
    expect((await remove(admin, user.id)).response.status).toBe(404);
    const page = await signInPage(app, user);
    expect(page.status).toBe(400);
    expect(page.text).toContain("The email or password is wrong.");
  });

  it("X-ID-UADM-6 an account another organization has leaves this one only: its tokens here end, the other organization keeps it", async (ctx) => {
    if (t.external) return skipOnDeployment(ctx, NEEDS.organizations);
    const a = await organization();
    const b = await organization();
    const { user, tokens } = await memberOf(a.app);
    const atB = await tokensFor(b.app, user);
    expect((await remove(a.admin, user.id)).response.status).toBe(204);
    await expectEnded(a.app, tokens);
    expect((await get(a.admin, user.id)).response.status).toBe(404);
    await expectLive(b.app, atB);
    expect((await get(b.admin, user.id)).data).toMatchObject({ enabled: true, applications: [{ id: b.app.id }] });
    // Signing in to this organization's application again makes them one of its users again.
    await tokensFor(a.app, user);
    expect((await get(a.admin, user.id)).response.status).toBe(200);
  });
});
