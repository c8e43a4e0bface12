/**
 * The second factor as admins and the Security page's sign-in see it: the policy set through the
 * administration API (X-ID-MFA-9), `/account/security` signing in through the account client
 * (X-ID-MFA-10), and an admin removing a user's second factor (X-ID-UADM-7). In-process only: the
 * `user.updated` of a removal is received by a webhook receiver on 127.0.0.1, and codes are
 * computed with `otpauth` at the service's time.
 */
import * as OTPAuth from "otpauth";
import { afterAll, describe, expect, it } from "vitest";
import { bearer, identityApi } from "../harness/api.ts";
import { fetchFrom, freshLoopbackAddress } from "../harness/client-address.ts";
import { createApp, createUser, type TestApp } from "../harness/identity-fixtures.ts";
import { authorizationPath, Browser, formFields, loginForm, pkcePair } from "../harness/oauth-flow.ts";
import { identityOnDeployment, NEEDS, skipFileOnDeployment } from "../harness/skip.ts";
import { fileWorld } from "../harness/worlds.ts";
import { createWebhook, organizationWithToken, startReceiver, webhookWorld, type Receiver } from "./webhooks-fixtures.ts";

skipFileOnDeployment(identityOnDeployment(), NEEDS.webhookReceivers);
const world = fileWorld(() => webhookWorld(), { skippedFile: identityOnDeployment() });
const receivers: Receiver[] = [];
afterAll(async () => {
  for (const r of receivers.splice(0)) await r.close();
});

type User = { id: string; email: string; password: string };
const SECOND_STEP = "/signin/second-factor";
const admin = async () => identityApi(world.target, { token: await world.token() });
const browser = () => new Browser(world.target.url, fetchFrom(freshLoopbackAddress()));

/** The login page of `app`, then its form posted: the 303 that follows the password. */
async function passwordStep(b: Browser, app: { clientId: string; redirectUri: string }, user: User) {
  const start = await b.get(
    authorizationPath({ clientId: app.clientId, redirectUri: app.redirectUri, scope: "openid email", challenge: pkcePair().challenge }),
  );
  expect(start.status).toBe(200);
  const done = await b.post("/oauth/authorize", loginForm(formFields(start.text), user));
  expect(done.status, done.text.slice(0, 300)).toBe(303);
  return done.location!;
}

/** Whether the password alone finished the sign-in (true) or the second step comes next (false). */
const oneStep = async (app: { clientId: string; redirectUri: string }, user: User) =>
  !(await passwordStep(browser(), app, user)).startsWith(SECOND_STEP);

const codeAt = (secret: string) =>
  new OTPAuth.TOTP({ secret: OTPAuth.Secret.fromBase32(secret), algorithm: "SHA1", digits: 6, period: 30 }).generate({
    timestamp: world.target.clock?.now().getTime() ?? Date.now(),
  });
const csrfOf = (html: string) => formFields(html).csrfToken;

/** Turns TOTP on in a signed-in browser through the Security page; the secret. */
async function enrol(b: Browser): Promise<string> {
  const security = await b.get("/account/security");
  expect(security.status).toBe(200);
  const started = await b.post("/account/security", { csrf_token: csrfOf(security.text), action: "start" });
  const secret = /<code id="totp-secret">([^<]+)<\/code>/.exec(started.text)![1]!.replace(/\s/g, "");
  const on = await b.post("/account/security", { csrf_token: csrfOf(started.text), action: "confirm", code: codeAt(secret) });
  expect(on.status).toBe(200);
  return secret;
}

describe("X-ID-MFA-9 the policy through the administration API", () => {
  it("X-ID-MFA-9 an application's secondFactor: the organization's by default, set on create and update, required asks every sign-in for a second step", async () => {
    const api = await admin();
    const redirectUris = ["http://localhost:8080/callback"];
    const plain = await api.POST("/api/applications", { body: { name: "Plain", clientType: "public", redirectUris } });
    expect(plain.response.status).toBe(201);
    expect(plain.data!.secondFactor).toBe("organization");
    const strict = await api.POST("/api/applications", {
      body: { name: "Strict", clientType: "public", redirectUris, secondFactor: "required" },
    });
    expect(strict.data!.secondFactor).toBe("required");
    const appId = strict.data!.id;
    const got = await api.GET("/api/applications/{appId}", { params: { path: { appId } } });
    expect(got.data!.secondFactor).toBe("required");

    const user = await createUser(world.target);
    const strictApp = { clientId: strict.data!.clientId, redirectUri: redirectUris[0]! };
    expect(await oneStep(strictApp, user)).toBe(false);
    expect(await oneStep({ clientId: plain.data!.clientId, redirectUri: redirectUris[0]! }, user)).toBe(true);

    const relaxed = await api.PATCH("/api/applications/{appId}", { params: { path: { appId } }, body: { secondFactor: "optional" } });
    expect(relaxed.data!.secondFactor).toBe("optional");
    expect(await oneStep(strictApp, user)).toBe(true);
    const inherits = await api.PATCH("/api/applications/{appId}", { params: { path: { appId } }, body: { secondFactor: "organization" } });
    expect(inherits.data!.secondFactor).toBe("organization");
    // Something else changes; the policy stays.
    const renamed = await api.PATCH("/api/applications/{appId}", { params: { path: { appId } }, body: { name: "Renamed" } });
    expect(renamed.data!.secondFactor).toBe("organization");

    const bad = await api.PATCH("/api/applications/{appId}", {
      params: { path: { appId } },
      body: { secondFactor: "always" as "required" },
    });
    expect(bad.response.status).toBe(400);
  });

  it("X-ID-MFA-9 the organization's secondFactor: optional until set, PATCH changes it, applications without their own follow it", async () => {
    const org = await organizationWithToken(world.target);
    const api = identityApi(world.target, { token: await org.token() });
    const current = await api.GET("/api/organizations/current");
    expect(current.data).toMatchObject({ id: org.organizationId, secondFactor: "optional" });
    const follows = await createApp(world.target, { organizationId: org.organizationId });
    const own = await createApp(world.target, { organizationId: org.organizationId });
    const ownPolicy = await api.PATCH("/api/applications/{appId}", {
      params: { path: { appId: own.id } },
      body: { secondFactor: "optional" },
    });
    expect(ownPolicy.response.status).toBe(200);

    const required = await api.PATCH("/api/organizations/current", { body: { secondFactor: "required" } });
    expect(required.response.status).toBe(200);
    expect(required.data).toMatchObject({ id: org.organizationId, secondFactor: "required" });
    expect((await api.GET("/api/organizations/current")).data!.secondFactor).toBe("required");
    // An empty change answers the organization as it is.
    expect((await api.PATCH("/api/organizations/current", { body: {} })).data!.secondFactor).toBe("required");
    // So does a PATCH without a body.
    const bodiless = await fetch(`${world.target.url}/api/organizations/current`, {
      method: "PATCH",
      headers: { authorization: `Bearer ${await org.token()}` },
    });
    expect(bodiless.status).toBe(200);
    expect(((await bodiless.json()) as { secondFactor: string }).secondFactor).toBe("required");

    const user = await createUser(world.target);
    expect(await oneStep(follows, user)).toBe(false);
    expect(await oneStep(own, user)).toBe(true);

    // Unknown fields and values are refused; the name is not changed here.
    for (const body of [{ name: "Renamed" }, { secondFactor: "always" }]) {
      const res = await api.PATCH("/api/organizations/current", { body: body as { secondFactor: "required" } });
      expect(res.response.status, JSON.stringify(body)).toBe(400);
    }
    // Only an admin, with a token.
    const someone = await createUser(world.target);
    const { token } = await world.target.service!.ctx.accessTokens.issue({
      userId: someone.id,
      clientId: "identity-dashboard",
      scopes: ["openid"],
    });
    const notAdmin = await identityApi(world.target).PATCH("/api/organizations/current", {
      body: { secondFactor: "optional" },
      ...bearer(token),
    });
    expect(notAdmin.response.status).toBe(403);
    expect(notAdmin.error).toMatchObject({ code: "not_an_admin" });
    const anonymous = await identityApi(world.target).PATCH("/api/organizations/current", { body: { secondFactor: "optional" } });
    expect(anonymous.response.status).toBe(401);
    expect((await api.GET("/api/organizations/current")).data!.secondFactor).toBe("required");
  });
});

describe("X-ID-MFA-10 the Security page's sign-in", () => {
  it("X-ID-MFA-10 without a session /account/security signs in through the identity-account client and comes back to it", async () => {
    const user = await createUser(world.target);
    const b = browser();
    const start = await b.get("/account/security");
    expect(start.status).toBe(302);
    const to = new URL(start.location!, world.target.url);
    expect(to.pathname).toBe("/oauth/authorize");
    expect(to.searchParams.get("client_id")).toBe("identity-account");
    expect(to.searchParams.get("redirect_uri")).toBe(`${world.target.url}/account/security`);
    const login = await b.get(start.location!);
    expect(login.status).toBe(200);
    const done = await b.post("/oauth/authorize", loginForm(formFields(login.text), user));
    expect(done.status).toBe(303);
    expect(done.location!.startsWith(`${world.target.url}/account/security?`)).toBe(true);
    const back = await b.get(done.location!);
    expect(back.status).toBe(302);
    expect(back.location).toBe("/account/security");
    const page = await b.get("/account/security");
    expect(page.status).toBe(200);
    expect(page.text).toContain(user.email);
    // The two pages link to each other.
    expect(page.text).toContain('href="/account"');
    expect((await b.get("/account")).text).toContain('href="/account/security"');
  });

  it("X-ID-MFA-10 a query that breaks the contract is the 400 page leading to /account/security; unknown parameters are ignored", async () => {
    const b = browser();
    for (const query of ["?state=" + "0".repeat(513), "?error=" + "e".repeat(129)]) {
      const res = await b.get(`/account/security${query}`);
      expect(res.status, query).toBe(400);
      expect(res.location).toBeUndefined();
      expect(res.text).toContain("This link is not valid");
      expect(res.text).toContain('href="/account/security"');
    }
    const tagged = await b.get("/account/security?utm_source=newsletter");
    expect(tagged.status).toBe(302);
    expect(new URL(tagged.location!, world.target.url).searchParams.get("client_id")).toBe("identity-account");
  });

  it("X-ID-MFA-10 a cancelled sign-in is the 401 page with a way to sign in, never a loop; a query cannot choose the redirect", async () => {
    const b = browser();
    const cancelled = await b.get("/account/security?error=access_denied&error_description=The+user+denied+access.");
    expect(cancelled.status).toBe(401);
    expect(cancelled.text).toContain('href="/account/security"');
    expect(cancelled.text).not.toContain("denied access");
    const odd = await b.get("/account/security?redirect_uri=https%3A%2F%2Fevil.example%2F");
    expect(odd.status).toBe(302);
    expect(new URL(odd.location!, world.target.url).searchParams.get("redirect_uri")).toBe(`${world.target.url}/account/security`);
  });
});

describe("X-ID-UADM-7 an admin removes a user's second factor", () => {
  it("X-ID-UADM-7 removes the authenticator app and recovery codes of a user of the organization, with user.updated and the audit event", async () => {
    const app: TestApp = await createApp(world.target, { organizationId: world.organizationId });
    const r = await startReceiver();
    receivers.push(r);
    await createWebhook(world, app.id, { url: r.url, events: ["user.updated"] });
    const user = await createUser(world.target);
    const b = browser();
    await passwordStep(b, app, user);
    await enrol(b);
    expect(await oneStep(app, user)).toBe(false);

    const api = await admin();
    const removed = await api.DELETE("/api/organizations/current/users/{userId}/second-factor", { params: { path: { userId: user.id } } });
    expect(removed.response.status).toBe(204);
    expect(await oneStep(app, user)).toBe(true);
    // The user's Security page says it is off; the running session goes on.
    expect((await b.get("/account/security")).text).toContain("Set up an authenticator app");

    await r.waitFor(1);
    expect(r.received[0]!.json).toMatchObject({
      event: "user.updated",
      data: { userId: user.id, email: user.email, changedFields: ["secondFactor"] },
    });
    const audit = await api.GET("/api/audit-events", { params: { query: { type: "user.updated", userId: user.id } } });
    expect(audit.data!.items[0]).toMatchObject({ actor: { type: "admin" }, details: { changedFields: ["secondFactor"] } });

    // Again: nothing to remove, 204 and no second event.
    const again = await api.DELETE("/api/organizations/current/users/{userId}/second-factor", { params: { path: { userId: user.id } } });
    expect(again.response.status).toBe(204);
    await new Promise((done) => setTimeout(done, 300));
    expect(r.received).toHaveLength(1);
  });

  it("X-ID-UADM-7 a user of another organization is 404 and keeps their factor", async () => {
    const app = await createApp(world.target);
    const user = await createUser(world.target);
    const b = browser();
    await passwordStep(b, app, user);
    await enrol(b);
    const api = await admin();
    const res = await api.DELETE("/api/organizations/current/users/{userId}/second-factor", { params: { path: { userId: user.id } } });
    expect(res.response.status).toBe(404);
    expect(res.error).toMatchObject({ code: "not_found" });
    expect(await oneStep(app, user)).toBe(false);
  });
});
