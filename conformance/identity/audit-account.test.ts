/**
 * X-ID-AUD-1, X-ID-AUD-6: what the second factor, the account page and the admin's user
 * management record, and the events recorded before without a test of their own (sign-out, token
 * revocation, webhook changes). An account's own events belong to no organization (X-ID-AUD-3), so
 * they are read from the service's table; an admin's are read through the API.
 */
import * as OTPAuth from "otpauth";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bearer, expectStatus, identityApi, type IdentityApi } from "../harness/api.ts";
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
import { identityOnDeployment, NEEDS, skipFileOnDeployment } from "../harness/skip.ts";
import { identityTarget, type IdentityTarget } from "../harness/targets.ts";

type User = { id: string; email: string; password: string };
interface Row {
  type: string;
  actor_type: string;
  actor_id: string | null;
  application_id: string | null;
  organization_id: string | null;
  user_agent: string | null;
  details: string;
}

let t: IdentityTarget;
let api: IdentityApi;
let org: Organization;
let admin: string;
let app: TestApp;
skipFileOnDeployment(identityOnDeployment(), NEEDS.clock);
beforeAll(async () => {
  if (identityOnDeployment()) return;
  t = await identityTarget();
  t.clock!.freeze();
  api = identityApi(t);
  org = await t.createOrganization!();
  app = await createApp(t, { organizationId: org.organizationId });
  admin = await adminToken(t, org);
});
afterAll(async () => t?.close());

const AGENT = "AuditTest/1.0";
const pkce = pkcePair();

/** The user's events as stored, oldest first (the account's own ones are shown to no organization). */
async function rowsOf(userId: string): Promise<Row[]> {
  return t
    .service!.db("audit_events")
    .where({ user_id: userId })
    .orderBy([{ column: "occurred_at" }, { column: "id" }]);
}
const typesOf = async (userId: string) => (await rowsOf(userId)).map((r) => r.type);
const rowOf = async (userId: string, type: string) => (await rowsOf(userId)).find((r) => r.type === type);

/** A browser that says who it is. */
const browser = () =>
  new Browser(t.url, ((input: string | URL, init?: RequestInit) =>
    fetch(input, { ...init, headers: { ...(init?.headers as Record<string, string>), "user-agent": AGENT } })) as typeof fetch);

/** The login form of `app` posted: the 303 that follows. */
async function passwordStep(b: Browser, user: User) {
  const start = await b.get(
    authorizationPath({ clientId: app.clientId, redirectUri: app.redirectUri, challenge: pkce.challenge, scope: "openid", state: "s" }),
  );
  return b.post("/oauth/authorize", loginForm(formFields(start.text), user));
}

const totpOf = (secret: string) =>
  new OTPAuth.TOTP({ secret: OTPAuth.Secret.fromBase32(secret), algorithm: "SHA1", digits: 6, period: 30 });
const codeNow = (secret: string) => totpOf(secret).generate({ timestamp: t.clock!.now().getTime() });
const csrfOf = (html: string) => formFields(html).csrfToken;

describe("second factor", () => {
  it("X-ID-AUD-6 enrolment, a refused code, a recovery code, new codes and removal are recorded, never a code", async () => {
    const user = await createUser(t);
    const b = browser();
    expect((await passwordStep(b, user)).status).toBe(303);
    const security = await b.get("/account/security");
    const started = await b.post("/account/security", { csrf_token: csrfOf(security.text), action: "start" });
    const secret = /<code id="totp-secret">([^<]+)<\/code>/.exec(started.text)![1]!.replace(/\s/g, "");
    const confirmed = await b.post("/account/security", { csrf_token: csrfOf(started.text), action: "confirm", code: codeNow(secret) });
    expect(confirmed.status).toBe(200);
    const codes = [...confirmed.text.matchAll(/<li><code>([0-9a-z-]+)<\/code><\/li>/g)].map((m) => m[1]!);
    expect(await rowOf(user.id, "user.factor_enrolled")).toMatchObject({
      actor_id: user.id,
      user_agent: AGENT,
      details: '{"kind":"totp"}',
    });
    t.clock!.advance(60_000);

    // The sign-in's second step, through the application: a wrong code, then a recovery code.
    const other = browser();
    const afterPassword = await passwordStep(other, user);
    const stepPage = await other.get(afterPassword.location!);
    const fields = formFields(stepPage.text);
    const submit = (code: string) =>
      other.post("/signin/second-factor", { csrf_token: fields.csrfToken, request_id: fields.requestId, code });
    expect((await submit("000000")).status).toBe(400);
    expect((await submit(codes[0]!)).status).toBe(303);
    const failed = await rowOf(user.id, "user.second_factor_failed");
    expect(failed).toMatchObject({ application_id: app.id, organization_id: org.organizationId, details: '{"reason":"invalid_code"}' });
    expect(await rowOf(user.id, "user.recovery_code_used")).toMatchObject({ application_id: app.id });

    // New codes and removal on the Security page, each proven by the password.
    const page = await b.get("/account/security");
    const regenerated = await b.post("/account/security", { csrf_token: csrfOf(page.text), action: "regenerate", password: user.password });
    expect(regenerated.status).toBe(200);
    const removed = await b.post("/account/security", { csrf_token: csrfOf(page.text), action: "remove", password: user.password });
    expect(removed.status).toBe(200);
    const types = await typesOf(user.id);
    expect(types).toEqual(
      expect.arrayContaining([
        "user.factor_enrolled",
        "user.recovery_codes_regenerated",
        "user.factor_removed",
        "user.second_factor_failed",
      ]),
    );
    const stored = JSON.stringify(await rowsOf(user.id));
    for (const code of codes) expect(stored).not.toContain(code);
    expect(stored).not.toContain(secret);
  });
});

describe("account page", () => {
  /** Signs in to the account page: its page. */
  async function accountPage(b: Browser, user: User) {
    const start = await b.get("/account");
    const login = await b.get(start.location!);
    const done = await b.post("/oauth/authorize", loginForm(formFields(login.text), user));
    await b.get(done.location!);
    const page = await b.get("/account");
    expect(page.status).toBe(200);
    return page;
  }

  it("X-ID-AUD-6 removing an application's access, ending a session, a password change and the deletion are recorded", async () => {
    const user = await createUser(t);
    const b = browser();
    await authorizeWithPassword(t.url, {
      clientId: app.clientId,
      redirectUri: app.redirectUri,
      email: user.email,
      password: user.password,
    });
    const laptop = browser();
    expect((await passwordStep(laptop, user)).status).toBe(303);
    let page = await accountPage(b, user);
    expect((await b.post("/account/applications/revoke", { csrf_token: csrfOf(page.text), application_id: app.id })).status).toBe(303);
    expect(await rowOf(user.id, "user.application_access_removed")).toMatchObject({
      application_id: app.id,
      organization_id: org.organizationId,
      actor_id: user.id,
    });

    page = await b.get("/account");
    const handles = [...page.text.matchAll(/name="session" value="([^"]*)"/g)].map((m) => m[1]!);
    expect(handles.length).toBeGreaterThan(1);
    // The last listed session is another browser's (the current one is listed first).
    expect((await b.post("/account/sessions/end", { csrf_token: csrfOf(page.text), session: handles.at(-1)! })).status).toBe(303);
    expect(await rowOf(user.id, "session.ended")).toMatchObject({ details: '{"via":"account_page"}', user_agent: AGENT });

    const changed = await b.post("/account/password", {
      csrf_token: csrfOf(page.text),
      current_password: user.password,
      new_password: "a new long passphrase",
    });
    expect(changed.status).toBe(303);
    expect(await rowOf(user.id, "user.password_changed")).toMatchObject({ actor_type: "user", actor_id: user.id, organization_id: null });

    page = await b.get("/account");
    const deleted = await b.post("/account/delete", { csrf_token: csrfOf(page.text), password: "a new long passphrase" });
    expect(deleted.status).toBe(303);
    expect(await rowOf(user.id, "user.deleted")).toMatchObject({ user_agent: AGENT });
    expect(JSON.stringify(await rowsOf(user.id))).not.toContain("a new long passphrase");
  });
});

describe("admin user management", () => {
  const ONE = "/api/organizations/current/users/{userId}";
  const path = (userId: string) => ({ params: { path: { userId } } });

  it("X-ID-AUD-6 disabling, enabling and removing a user are recorded with the admin as actor, in the admin's organization", async () => {
    const user = await createUser(t);
    await authorizeWithPassword(t.url, {
      clientId: app.clientId,
      redirectUri: app.redirectUri,
      email: user.email,
      password: user.password,
    });
    await expectStatus(api.POST(`${ONE}/disable`, { ...path(user.id), ...bearer(admin) }), 200, "disable");
    await expectStatus(api.POST(`${ONE}/enable`, { ...path(user.id), ...bearer(admin) }), 200, "enable");
    const { response } = await api.DELETE(ONE, { ...path(user.id), ...bearer(admin) });
    expect(response.status).toBe(204);

    const seen = await expectStatus(
      api.GET("/api/audit-events", { params: { query: { userId: user.id } }, ...bearer(admin) }),
      200,
      "GET /api/audit-events",
    );
    const adminEvents = seen.items.filter((e) => e.actor.type === "admin");
    expect(adminEvents.map((e) => e.type)).toEqual(["user.removed", "user.enabled", "user.disabled"]);
    for (const e of adminEvents) expect(e.actor.id).toBe(org.admin.userId);
    expect(adminEvents[0]!.details).toEqual({ accountDeleted: true });
  });
});

describe("events recorded before", () => {
  it("X-ID-AUD-1 signing out records session.ended", async () => {
    const user = await createUser(t);
    const b = browser();
    expect((await passwordStep(b, user)).status).toBe(303);
    const logout = await b.get("/logout");
    expect((await b.post("/logout", { csrf_token: csrfOf(logout.text) })).status).toBe(303);
    expect(await rowOf(user.id, "session.ended")).toMatchObject({ actor_type: "user", actor_id: user.id, user_agent: AGENT });
  });

  it("X-ID-AUD-1 revoking a refresh token records token.revoked with the application, never the token", async () => {
    const user = await createUser(t);
    const flow = await authorizeWithPassword(t.url, {
      clientId: app.clientId,
      redirectUri: app.redirectUri,
      email: user.email,
      password: user.password,
      scope: "openid offline_access",
    });
    const tokens = await exchangeCode(t.url, flow, {
      clientId: app.clientId,
      redirectUri: app.redirectUri,
      clientSecret: app.clientSecret!,
    });
    const refresh = tokens.json.refresh_token as string;
    const revoked = await tokenRequest(
      t.url,
      { token: refresh, client_id: app.clientId, client_secret: app.clientSecret! },
      undefined,
      "/oauth/revoke",
    );
    expect(revoked.status).toBe(200);
    const row = await rowOf(user.id, "token.revoked");
    expect(row).toMatchObject({ application_id: app.id, organization_id: org.organizationId });
    expect(JSON.stringify(await rowsOf(user.id))).not.toContain(refresh);
  });

  it("X-ID-AUD-1 an admin's webhook changes are recorded with the admin as actor", async () => {
    const auth = bearer(admin);
    const appPath = { params: { path: { appId: app.id } } };
    const hook = await expectStatus(
      api.POST("/api/applications/{appId}/webhooks", {
        ...appPath,
        ...auth,
        body: { url: "https://hooks.example.com/x", events: ["user.created"] },
      }),
      201,
      "create webhook",
    );
    const hookPath = { params: { path: { appId: app.id, webhookId: hook.id } } };
    await expectStatus(
      api.PUT("/api/applications/{appId}/webhooks/{webhookId}", { ...hookPath, ...auth, body: { isActive: false } }),
      200,
      "update webhook",
    );
    const { response } = await api.DELETE("/api/applications/{appId}/webhooks/{webhookId}", { ...hookPath, ...auth });
    expect(response.status).toBe(204);
    const seen = await expectStatus(
      api.GET("/api/audit-events", { params: { query: { applicationId: app.id } }, ...auth }),
      200,
      "GET /api/audit-events",
    );
    const changes = seen.items.filter((e) => e.type.startsWith("webhook.") && e.details.webhookId === hook.id);
    expect(changes.map((e) => e.type)).toEqual(["webhook.deleted", "webhook.updated", "webhook.created"]);
    for (const e of changes) expect(e.actor).toEqual({ type: "admin", id: org.admin.userId });
    expect(JSON.stringify(changes)).not.toContain(hook.secret);
  });
});
