/** Single sign-on, sessions, consent, sign-up and sign-out: ID-SSO-1, X-ID-SESS-1, X-ID-AZ-2, X-ID-ADM-1 (flow), ID-EV-1 via the hosted page. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { IdentityApi } from "../harness/api.ts";
import { identityWorld } from "../harness/worlds.ts";
import type { IdentityTarget } from "../harness/targets.ts";
import { decodeJwt } from "../harness/http.ts";
import { NEEDS, skipOnDeployment, skipWhenRegistrationRefused } from "../harness/skip.ts";
import { createApp, type TestApp } from "../harness/identity-fixtures.ts";
import {
  adminTokenViaFlow,
  authorizationPath,
  authorizeWithPassword,
  Browser,
  exchangeCode,
  formFields,
  pkcePair,
  redirectParams,
  loginForm,
} from "../harness/oauth-flow.ts";

let t: IdentityTarget;
let appA: TestApp;
let appB: TestApp;
let user: { id: string; email: string; password: string };
/** Typed clients, with the token given. */
let api: (token?: string) => IdentityApi;
beforeAll(async () => {
  ({ target: t, appA, appB, user, api } = await identityWorld({ apps: { appA: { name: "App A" }, appB: { name: "App B" } }, user: true }));
});
afterAll(async () => t?.close());

const pkce = pkcePair();
const start = (b: Browser, a: TestApp, over: Record<string, string> = {}) =>
  b.get(
    authorizationPath({
      clientId: a.clientId,
      redirectUri: a.redirectUri,
      challenge: pkce.challenge,
      scope: "openid email",
      state: "s",
      ...over,
    }),
  );
const login = async (b: Browser, a: TestApp) => {
  const f = formFields((await start(b, a)).text);
  return b.post("/oauth/authorize", loginForm(f, user));
};

describe("single sign-on", () => {
  it("ID-SSO-1 a user signed in through one application is not asked for a password by a second one", async () => {
    const b = new Browser(t.url);
    expect((await login(b, appA)).status).toBe(303);
    // App B: the consent page (new application), not the login page; no password field.
    const consent = await start(b, appB);
    expect(consent.status).toBe(200);
    expect(consent.text).not.toContain('type="password"');
    expect(consent.text).toContain(user.email);
    const f = formFields(consent.text);
    const done = await b.post("/oauth/authorize", { action: "consent", csrf_token: f.csrfToken, request_id: f.requestId });
    skipWhenRegistrationRefused(t, done.status);
    expect(done.status).toBe(303);
    expect(redirectParams(done.location).get("code")).toBeTruthy();
    // Once granted, the next authorization of app B goes straight back with a code.
    const again = await start(b, appB);
    expect(again.status).toBe(302);
    expect(redirectParams(again.location).get("code")).toBeTruthy();
    expect(redirectParams(again.location).get("state")).toBe("s");
  });

  it("X-ID-AZ-2 a signed-in user is asked to consent only for scopes not yet granted; prompt=consent and prompt=login force the pages", async () => {
    const b = new Browser(t.url);
    await login(b, appA);
    expect((await start(b, appA)).status).toBe(302);
    const wider = await start(b, appA, { scope: "openid email profile" });
    expect(wider.status).toBe(200);
    expect(wider.text).toContain('value="consent"');
    expect(wider.text).toContain("See your name");
    expect((await start(b, appA, { prompt: "consent" })).text).toContain('value="consent"');
    expect((await start(b, appA, { prompt: "login" })).text).toContain('type="password"');
    const none = await start(b, appA, { scope: "openid email profile", prompt: "none" });
    expect(redirectParams(none.location).get("error")).toBe("consent_required");
  });

  it("X-ID-AZ-2 the first-party dashboard client never asks for consent (X-ID-ADM-1 token via the flow)", async () => {
    const org = await t.createOrganization!();
    const token = await adminTokenViaFlow(t, org.admin);
    expect(decodeJwt(token).payload.client_id).toBe("identity-dashboard");
    expect(decodeJwt(token).payload.sub).toBe(org.admin.userId);
  });

  it("X-ID-SESS-1 the session cookie is identity_session, HttpOnly, SameSite=Lax, Path=/, and a new id at every sign-in", async () => {
    const b = new Browser(t.url);
    const first = await login(b, appA);
    const cookie = first.headers.getSetCookie().find((c) => c.startsWith("identity_session="))!;
    expect(cookie).toMatch(/HttpOnly/);
    expect(cookie).toMatch(/SameSite=Lax/);
    expect(cookie).toMatch(/Path=\//);
    expect(cookie).not.toMatch(/Secure/); // the test issuer is http
    const id1 = b.cookies.get("identity_session");
    const b2 = b; // sign in again with prompt=login: a new session id, the old one ends
    const f = formFields((await start(b2, appA, { prompt: "login" })).text);
    await b2.post("/oauth/authorize", loginForm(f, user));
    const id2 = b2.cookies.get("identity_session");
    expect(id2).toBeTruthy();
    expect(id2).not.toBe(id1);
    const stale = new Browser(t.url);
    stale.cookies.set("identity_session", id1!);
    expect((await start(stale, appA)).text).toContain('type="password"');
  });

  it("X-ID-SESS-1 several tabs can each authorize at once", async () => {
    const b = new Browser(t.url);
    const tab1 = formFields((await start(b, appA, { state: "tab1" })).text);
    const tab2 = formFields((await start(b, appB, { state: "tab2" })).text);
    expect(tab1.requestId).not.toBe(tab2.requestId);
    const r2 = await b.post("/oauth/authorize", loginForm(tab2, user));
    const r1 = await b.post("/oauth/authorize", loginForm(tab1, user));
    expect(redirectParams(r1.location).get("state")).toBe("tab1");
    expect(r1.location!.startsWith(appA.redirectUri)).toBe(true);
    expect(redirectParams(r2.location).get("state")).toBe("tab2");
    expect(r2.location!.startsWith(appB.redirectUri)).toBe(true);
  });

  it("X-ID-SESS-1 sign-out (CSRF-protected POST /logout) ends the session: the next authorization asks for the password", async () => {
    const b = new Browser(t.url);
    await login(b, appA);
    const page = await b.get("/logout");
    expect(page.status).toBe(200);
    expect(page.text).toContain(user.email);
    const csrf = formFields(page.text).csrfToken;
    expect((await b.post("/logout", { csrf_token: "forged" })).status).toBe(403);
    const out = await b.post("/logout", { csrf_token: csrf });
    expect(out.status).toBe(303);
    expect(out.location).toBe("/logout");
    expect(out.headers.getSetCookie().some((c) => /^identity_session=;.*Max-Age=0/.test(c))).toBe(true);
    expect((await start(b, appA)).text).toContain('type="password"');
    expect((await b.get("/logout")).text).toContain("You are signed out");
  });

  it("X-ID-SESS-1 sessions last 7 days", async (ctx) => {
    if (!t.clock) return skipOnDeployment(ctx, NEEDS.clock);
    const b = new Browser(t.url);
    await login(b, appA);
    t.clock!.advance(7 * 24 * 3600_000 + 1000);
    expect((await start(b, appA)).text).toContain('type="password"');
  });
});

describe("sign-up on the hosted page", () => {
  it("ID-AZ-8 a user who signs up through the hosted page is signed in and sent back with a code that exchanges for tokens", async () => {
    const b = new Browser(t.url);
    const login = await start(b, appA);
    const href = /href="(\/signup\?request_id=[^"]+)"/.exec(login.text)![1]!;
    const page = await b.get(href);
    expect(page.status).toBe(200);
    expect(page.text).toContain("App A");
    const f = formFields(page.text);
    const email = `new-${Date.now()}@example.com`;
    const short = await b.post("/signup", {
      csrf_token: f.csrfToken,
      request_id: f.requestId,
      email,
      password: "short",
      first_name: "New",
      last_name: "User",
    });
    expect(short.status).toBe(400);
    expect(short.text).toContain("at least 8 characters");
    const taken = await b.post("/signup", {
      csrf_token: f.csrfToken,
      request_id: f.requestId,
      email: user.email,
      password: "long enough pw",
      first_name: "New",
      last_name: "User",
    });
    skipWhenRegistrationRefused(t, taken.status); // a deployment's registration limit: skipped with the reason
    expect(taken.status).toBe(400);
    expect(taken.text).toContain("already exists");
    expect(
      (
        await b.post("/signup", {
          csrf_token: "forged",
          request_id: f.requestId,
          email,
          password: "long enough pw",
          first_name: "New",
          last_name: "User",
        })
      ).status,
    ).toBe(403);
    const done = await b.post("/signup", {
      csrf_token: f.csrfToken,
      request_id: f.requestId,
      email,
      password: "long enough pw",
      first_name: "New",
      last_name: "User",
    });
    expect(done.status).toBe(303);
    expect(b.cookies.get("identity_session")).toBeTruthy();
    const code = redirectParams(done.location).get("code")!;
    const res = await exchangeCode(
      t.url,
      { code, verifier: pkce.verifier, state: "s", location: done.location!, browser: b },
      { clientId: appA.clientId, redirectUri: appA.redirectUri, clientSecret: appA.clientSecret! },
    );
    expect(res.status).toBe(200);
    const info = await api(res.json.access_token).GET("/oauth/userinfo");
    expect(info.data!.email).toBe(email);
  });

  it("X-ID-SESS-1 the sign-up page of an unknown request is a 400 page", async () => {
    const res = await new Browser(t.url).get("/signup?request_id=00000000-0000-4000-8000-000000000000");
    expect(res.status).toBe(400);
    expect(res.headers.get("x-frame-options")).toBe("DENY");
  });
});

describe("an existing user", () => {
  it("ID-SSO-1 the flow helper completes through consent for a signed-in browser", async () => {
    const b = new Browser(t.url);
    await authorizeWithPassword(t.url, {
      clientId: appA.clientId,
      redirectUri: appA.redirectUri,
      email: user.email,
      password: user.password,
      browser: b,
    });
    const third = await createApp(t);
    const f = await authorizeWithPassword(t.url, {
      clientId: third.clientId,
      redirectUri: third.redirectUri,
      email: "unused",
      password: "unused",
      browser: b,
    });
    expect(f.code).toBeTruthy();
  });
});
