/** Single sign-on, sessions, consent, sign-up and sign-out: ID-SSO-1, X-ID-SESS-1, X-ID-AZ-2, X-ID-ADM-1 (flow), ID-EV-1 via the hosted page. */
import { describe, expect, it } from "vitest";
import { fileWorld, identityWorld } from "../harness/worlds.ts";
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

const world = fileWorld(() => identityWorld({ apps: { appA: { name: "App A" }, appB: { name: "App B" } }, user: true }));

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
  return b.post("/oauth/authorize", loginForm(f, world.user));
};

describe("single sign-on", () => {
  it("ID-SSO-1 a user signed in through one application is not asked for a password by a second one", async () => {
    const b = new Browser(world.target.url);
    expect((await login(b, world.appA)).status).toBe(303);
    // App B: the consent page (new application), not the login page; no password field.
    const consent = await start(b, world.appB);
    expect(consent.status).toBe(200);
    expect(consent.text).not.toContain('type="password"');
    expect(consent.text).toContain(world.user.email);
    const f = formFields(consent.text);
    const done = await b.post("/oauth/authorize", { action: "consent", csrf_token: f.csrfToken, request_id: f.requestId });
    skipWhenRegistrationRefused(world.target, done.status);
    expect(done.status).toBe(303);
    expect(redirectParams(done.location).get("code")).toBeTruthy();
    // Once granted, the next authorization of app B goes straight back with a code.
    const again = await start(b, world.appB);
    expect(again.status).toBe(302);
    expect(redirectParams(again.location).get("code")).toBeTruthy();
    expect(redirectParams(again.location).get("state")).toBe("s");
  });

  it("X-ID-AZ-2 a signed-in user is asked to consent only for scopes not yet granted; prompt=consent and prompt=login force the pages", async () => {
    const b = new Browser(world.target.url);
    await login(b, world.appA);
    expect((await start(b, world.appA)).status).toBe(302);
    const wider = await start(b, world.appA, { scope: "openid email profile" });
    expect(wider.status).toBe(200);
    expect(wider.text).toContain('value="consent"');
    expect(wider.text).toContain("See your name");
    expect((await start(b, world.appA, { prompt: "consent" })).text).toContain('value="consent"');
    expect((await start(b, world.appA, { prompt: "login" })).text).toContain('type="password"');
    const none = await start(b, world.appA, { scope: "openid email profile", prompt: "none" });
    expect(redirectParams(none.location).get("error")).toBe("consent_required");
  });

  it("X-ID-AZ-2 the first-party dashboard client never asks for consent (X-ID-ADM-1 token via the flow)", async () => {
    const org = await world.target.createOrganization!();
    const token = await adminTokenViaFlow(world.target, org.admin);
    expect(decodeJwt(token).payload.client_id).toBe("identity-dashboard");
    expect(decodeJwt(token).payload.sub).toBe(org.admin.userId);
  });

  it("X-ID-SESS-1 the session cookie is identity_session, HttpOnly, SameSite=Lax, Path=/, and a new id at every sign-in", async () => {
    const b = new Browser(world.target.url);
    const first = await login(b, world.appA);
    const cookie = first.headers.getSetCookie().find((c) => c.startsWith("identity_session="))!;
    expect(cookie).toMatch(/HttpOnly/);
    expect(cookie).toMatch(/SameSite=Lax/);
    expect(cookie).toMatch(/Path=\//);
    expect(cookie).not.toMatch(/Secure/); // the test issuer is http
    const id1 = b.cookies.get("identity_session");
    const b2 = b; // sign in again with prompt=login: a new session id, the old one ends
    const f = formFields((await start(b2, world.appA, { prompt: "login" })).text);
    await b2.post("/oauth/authorize", loginForm(f, world.user));
    const id2 = b2.cookies.get("identity_session");
    expect(id2).toBeTruthy();
    expect(id2).not.toBe(id1);
    const stale = new Browser(world.target.url);
    stale.cookies.set("identity_session", id1!);
    expect((await start(stale, world.appA)).text).toContain('type="password"');
  });

  it("X-ID-SESS-1 several tabs can each authorize at once", async () => {
    const b = new Browser(world.target.url);
    const tab1 = formFields((await start(b, world.appA, { state: "tab1" })).text);
    const tab2 = formFields((await start(b, world.appB, { state: "tab2" })).text);
    expect(tab1.requestId).not.toBe(tab2.requestId);
    const r2 = await b.post("/oauth/authorize", loginForm(tab2, world.user));
    const r1 = await b.post("/oauth/authorize", loginForm(tab1, world.user));
    expect(redirectParams(r1.location).get("state")).toBe("tab1");
    expect(r1.location!.startsWith(world.appA.redirectUri)).toBe(true);
    expect(redirectParams(r2.location).get("state")).toBe("tab2");
    expect(r2.location!.startsWith(world.appB.redirectUri)).toBe(true);
  });

  it("X-ID-SESS-1 sign-out (CSRF-protected POST /logout) ends the session: the next authorization asks for the password", async () => {
    const b = new Browser(world.target.url);
    await login(b, world.appA);
    const page = await b.get("/logout");
    expect(page.status).toBe(200);
    expect(page.text).toContain(world.user.email);
    const csrf = formFields(page.text).csrfToken;
    expect((await b.post("/logout", { csrf_token: "forged" })).status).toBe(403);
    const out = await b.post("/logout", { csrf_token: csrf });
    expect(out.status).toBe(303);
    expect(out.location).toBe("/logout");
    expect(out.headers.getSetCookie().some((c) => /^identity_session=;.*Max-Age=0/.test(c))).toBe(true);
    expect((await start(b, world.appA)).text).toContain('type="password"');
    expect((await b.get("/logout")).text).toContain("You are signed out");
  });

  it("X-ID-SESS-1 sessions last 7 days", async (ctx) => {
    if (!world.target.clock) return skipOnDeployment(ctx, NEEDS.clock);
    const b = new Browser(world.target.url);
    await login(b, world.appA);
    world.target.clock!.advance(7 * 24 * 3600_000 + 1000);
    expect((await start(b, world.appA)).text).toContain('type="password"');
  });
});

describe("sign-up on the hosted page", () => {
  it("ID-AZ-8 a user who signs up through the hosted page is signed in and sent back with a code that exchanges for tokens", async () => {
    const b = new Browser(world.target.url);
    const login = await start(b, world.appA);
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
      email: world.user.email,
      password: "long enough pw",
      first_name: "New",
      last_name: "User",
    });
    skipWhenRegistrationRefused(world.target, taken.status); // a deployment's registration limit: skipped with the reason
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
      world.target.url,
      { code, verifier: pkce.verifier, state: "s", location: done.location!, browser: b },
      { clientId: world.appA.clientId, redirectUri: world.appA.redirectUri, clientSecret: world.appA.clientSecret! },
    );
    expect(res.status).toBe(200);
    const info = await world.api(res.json.access_token).GET("/oauth/userinfo");
    expect(info.data!.email).toBe(email);
  });

  it("X-ID-SESS-1 the sign-up page of an unknown request is a 400 page", async () => {
    const res = await new Browser(world.target.url).get("/signup?request_id=00000000-0000-4000-8000-000000000000");
    expect(res.status).toBe(400);
    expect(res.headers.get("x-frame-options")).toBe("DENY");
  });
});

describe("an existing user", () => {
  it("ID-SSO-1 the flow helper completes through consent for a signed-in browser", async () => {
    const b = new Browser(world.target.url);
    await authorizeWithPassword(world.target.url, {
      clientId: world.appA.clientId,
      redirectUri: world.appA.redirectUri,
      email: world.user.email,
      password: world.user.password,
      browser: b,
    });
    const third = await createApp(world.target);
    const f = await authorizeWithPassword(world.target.url, {
      clientId: third.clientId,
      redirectUri: third.redirectUri,
      email: "unused",
      password: "unused",
      browser: b,
    });
    expect(f.code).toBeTruthy();
  });
});
