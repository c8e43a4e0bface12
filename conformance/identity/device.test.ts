/** The device authorization grant (RFC 8628; X-ID-DEV-1..8). */
import { describe, expect, it } from "vitest";
import * as oauth from "oauth4webapi";
import { fileWorld, identityWorld } from "../harness/worlds.ts";
import { authorizeWithPassword, Browser, formFields, loginForm, tokenRequest } from "../harness/oauth-flow.ts";
import { adminToken, createApp, createUser, type TestApp } from "../harness/identity-fixtures.ts";
import { bearer, expectStatus, identityApi } from "../harness/api.ts";
import { decodeJwt } from "../harness/http.ts";
import { NEEDS, skipOnDeployment } from "../harness/skip.ts";

const world = fileWorld(() =>
  identityWorld({
    apps: {
      tv: { clientType: "public", deviceAuthorization: true },
      conf: { deviceAuthorization: true },
      plain: { clientType: "public" },
    },
    user: true,
  }),
);

const DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code";
const USER_CODE = /^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/;

const start = (a: TestApp, extra: Record<string, string> = {}) =>
  tokenRequest(
    world.target.url,
    { client_id: a.clientId, ...(a.clientSecret ? { client_secret: a.clientSecret } : {}), ...extra },
    undefined,
    "/oauth/device_authorization",
  );
const poll = (a: TestApp, deviceCode: string) =>
  tokenRequest(world.target.url, {
    grant_type: DEVICE_GRANT,
    device_code: deviceCode,
    client_id: a.clientId,
    ...(a.clientSecret ? { client_secret: a.clientSecret } : {}),
  });

/** A browser signed in as the world's user (through an ordinary authorization of the `plain` app). */
async function signedIn(who: { email: string; password: string } = world.user): Promise<Browser> {
  const f = await authorizeWithPassword(world.target.url, {
    clientId: world.plain.clientId,
    redirectUri: world.plain.redirectUri,
    email: who.email,
    password: who.password,
  });
  return f.browser;
}

const csrfOf = (html: string) => /name="csrf_token" value="([^"]+)"/.exec(html)![1]!;

/** Types `userCode` on /device and takes `action` on the consent screen. */
async function decide(browser: Browser, userCode: string, action: "approve" | "deny") {
  const form = await browser.get(`/device?user_code=${encodeURIComponent(userCode)}`);
  expect(form.status).toBe(200);
  const consent = await browser.post("/device", { csrf_token: csrfOf(form.text), user_code: userCode, action: "lookup" });
  expect(consent.status).toBe(200);
  return browser.post("/device", { csrf_token: csrfOf(consent.text), user_code: userCode, action });
}

describe("device authorization grant", () => {
  it("X-ID-DEV-1 the endpoint answers the codes, the verification URIs, expires_in 600 and interval 5", async () => {
    const res = await start(world.tv, { scope: "openid offline_access" });
    expect(res.status).toBe(200);
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect(res.json.expires_in).toBe(600);
    expect(res.json.interval).toBe(5);
    expect(res.json.verification_uri).toBe(`${world.target.url}/device`);
    expect(res.json.verification_uri_complete).toBe(`${world.target.url}/device?user_code=${res.json.user_code}`);
    // Confidential clients authenticate as at the token endpoint.
    expect((await start(world.conf)).status).toBe(200);
    expect((await start({ ...world.conf, clientSecret: "wrong" })).status).toBe(401);
    expect((await start({ ...world.tv, clientId: "no-such-client" })).status).toBe(401);
    expect((await start(world.tv, { scope: "openid admin" })).json.error).toBe("invalid_scope");
  });

  it("X-ID-DEV-8 an application without the deviceAuthorization setting is unauthorized_client", async () => {
    const res = await start(world.plain);
    expect(res.status).toBe(400);
    expect(res.json.error).toBe("unauthorized_client");
  });

  it("X-ID-DEV-2 the user code is XXXX-XXXX of the base-20 alphabet, typed in any case without the dash", async () => {
    const res = await start(world.tv);
    expect(res.json.user_code).toMatch(USER_CODE);
    const browser = await signedIn();
    const form = await browser.get("/device");
    const typed = res.json.user_code.replace("-", " ").toLowerCase();
    const consent = await browser.post("/device", { csrf_token: csrfOf(form.text), user_code: typed, action: "lookup" });
    expect(consent.status).toBe(200);
    expect(consent.text).toContain(res.json.user_code);
  });

  it("X-ID-DEV-3 /device signs in first, names the application and its scopes, and needs the CSRF token", async () => {
    const anonymous = await new Browser(world.target.url).get("/device?user_code=BCDF-GHJK");
    expect(anonymous.status).toBe(302);
    expect(anonymous.location).toContain("/oauth/authorize?");
    expect(anonymous.location).toContain("redirect_uri=" + encodeURIComponent(`${world.target.url}/device`));
    const res = await start(world.tv, { scope: "openid email" });
    const browser = await signedIn();
    const form = await browser.get(`/device?user_code=${res.json.user_code}`);
    expect(form.text).toContain(res.json.user_code);
    expect((await browser.post("/device", { csrf_token: "forged", user_code: res.json.user_code, action: "approve" })).status).toBe(403);
    const consent = await browser.post("/device", { csrf_token: csrfOf(form.text), user_code: res.json.user_code, action: "lookup" });
    expect(consent.text).toContain(world.tv.name);
    expect(consent.text).toContain("See your email address");
    const unknown = await browser.post("/device", { csrf_token: csrfOf(form.text), user_code: "BBBB-BBBB", action: "lookup" });
    expect(unknown.status).toBe(400);
  });

  it("X-ID-DEV-3 signed out, a POST or a refused sign-in is the 401 page; an over-long user_code in the query is the form with 400", async () => {
    const res = await start(world.tv);
    const browser = await signedIn();
    const form = await browser.get("/device");
    const tooLong = await browser.get(`/device?user_code=${"B".repeat(65)}`);
    expect(tooLong.status).toBe(400);
    expect(tooLong.text).toContain('name="user_code"');
    // The session is gone (signed out elsewhere, or expired) while the form was open.
    browser.cookies.delete("identity_session");
    const signedOut = await browser.post("/device", { csrf_token: csrfOf(form.text), user_code: res.json.user_code, action: "lookup" });
    expect(signedOut.status).toBe(401);
    expect(signedOut.text).toContain("Sign in");
    // Signed out, the same link is the 400 page that leads to /device; an undeclared parameter is ignored.
    const outside = new Browser(world.target.url);
    expect((await outside.get(`/device?user_code=${"B".repeat(65)}`)).status).toBe(400);
    expect((await outside.get("/device?utm_source=tv")).status).toBe(302);
    // A sign-in that came back refused (the user cancelled it) is the 401 page, not another sign-in.
    expect((await new Browser(world.target.url).get("/device?error=access_denied&state=x")).status).toBe(401);
  });

  it("X-ID-DEV-9 the user code survives the sign-in: verification_uri_complete -> sign in -> the form filled in", async () => {
    const res = await start(world.tv);
    const browser = new Browser(world.target.url);
    const toSignIn = await browser.get(
      new URL(res.json.verification_uri_complete).pathname + new URL(res.json.verification_uri_complete).search,
    );
    expect(toSignIn.status).toBe(302);
    const login = await browser.get(toSignIn.location!);
    expect(login.status).toBe(200);
    const done = await browser.post("/oauth/authorize", loginForm(formFields(login.text), world.user));
    expect(done.status).toBe(303);
    const back = new URL(done.location!, world.target.url);
    expect(back.pathname).toBe("/device");
    const landed = await browser.get(back.pathname + back.search);
    expect(landed.status).toBe(302);
    expect(landed.location).toBe(`/device?user_code=${res.json.user_code}`);
    const form = await browser.get(landed.location!);
    expect(form.status).toBe(200);
    expect(form.text).toContain(`value="${res.json.user_code}"`);
    // A malformed code is not carried through the sign-in.
    const odd = await new Browser(world.target.url).get("/device?user_code=%3Cscript%3E");
    expect(new URL(odd.location!, world.target.url).searchParams.has("state")).toBe(false);
  });

  it("X-ID-DEV-4 beyond 5 wrong codes the page is 429 and looks nothing up", async () => {
    const res = await start(world.tv);
    // A user of its own: the limit would stop the other tests' user too.
    const browser = await signedIn(await createUser(world.target));
    const form = await browser.get("/device");
    const csrf = csrfOf(form.text);
    for (let i = 0; i < 5; i++)
      expect((await browser.post("/device", { csrf_token: csrf, user_code: "ZZZZ-ZZZZ", action: "lookup" })).status).toBe(400);
    const refused = await browser.post("/device", { csrf_token: csrf, user_code: res.json.user_code, action: "lookup" });
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
  });

  it("X-ID-DEV-5 authorization_pending, slow_down (+5 s, remembered), access_denied, expired_token", async (ctx) => {
    const clock = world.target.clock;
    if (!clock) return skipOnDeployment(ctx, NEEDS.clock);
    const res = await start(world.tv);
    const pending = await poll(world.tv, res.json.device_code);
    expect(pending.status).toBe(400);
    expect(pending.json.error).toBe("authorization_pending");
    expect((await poll(world.tv, res.json.device_code)).json.error).toBe("slow_down");
    clock.advance(6_000);
    // The interval is 10 s now: 6 s later is still too soon.
    expect((await poll(world.tv, res.json.device_code)).json.error).toBe("slow_down");
    clock.advance(16_000);
    expect((await poll(world.tv, res.json.device_code)).json.error).toBe("authorization_pending");
    const denied = await start(world.tv);
    await decide(await signedIn(), denied.json.user_code, "deny");
    expect((await poll(world.tv, denied.json.device_code)).json.error).toBe("access_denied");
    // Another client's device code is invalid_grant.
    expect((await poll(world.conf, res.json.device_code)).json.error).toBe("invalid_grant");
    clock.advance(600_000);
    expect((await poll(world.tv, res.json.device_code)).json.error).toBe("expired_token");
  });

  it("X-ID-DEV-5 of concurrent polls inside the interval one is pending, each other is slow_down and grows the interval once", async (ctx) => {
    const clock = world.target.clock;
    if (!clock) return skipOnDeployment(ctx, NEEDS.clock);
    const res = await start(world.tv);
    const answers = await Promise.all([1, 2, 3].map(() => poll(world.tv, res.json.device_code)));
    const errors = answers.map((a) => a.json.error).sort();
    expect(errors).toEqual(["authorization_pending", "slow_down", "slow_down"]);
    // Two early polls: 5 + 2 × 5 = 15 s, so 16 s later is in time, and the next poll says 20.
    clock.advance(16_000);
    expect((await poll(world.tv, res.json.device_code)).json.error).toBe("authorization_pending");
    const early = await poll(world.tv, res.json.device_code);
    expect(early.json.error).toBe("slow_down");
    expect(early.json.error_description).toContain("20 seconds");
  });

  it("X-ID-DEV-6 an approval gives tokens exactly once, with a refresh token for offline_access", async () => {
    const res = await start(world.tv, { scope: "openid offline_access" });
    const done = await decide(await signedIn(), res.json.user_code, "approve");
    expect(done.status).toBe(200);
    const answers = await Promise.all([1, 2, 3, 4].map(() => poll(world.tv, res.json.device_code)));
    const ok = answers.filter((a) => a.status === 200);
    expect(ok).toHaveLength(1);
    expect(ok[0]!.json.refresh_token).toBeTruthy();
    expect(decodeJwt(ok[0]!.json.access_token).payload.sub).toBe(world.user.id);
    expect(decodeJwt(ok[0]!.json.id_token).payload.aud).toBe(world.tv.clientId);
    // The refresh token works as any other.
    const refreshed = await tokenRequest(world.target.url, {
      grant_type: "refresh_token",
      refresh_token: ok[0]!.json.refresh_token,
      client_id: world.tv.clientId,
    });
    expect(refreshed.status).toBe(200);
  });

  it("X-ID-DEV-10 approving and denying are audit events the application's admins see", async () => {
    const org = await world.target.createOrganization!();
    const app = await createApp(world.target, { organizationId: org.organizationId, clientType: "public", deviceAuthorization: true });
    const approved = await start(app, { scope: "openid email" });
    const denied = await start(app);
    const browser = await signedIn();
    expect((await decide(browser, approved.json.user_code, "approve")).status).toBe(200);
    expect((await decide(browser, denied.json.user_code, "deny")).status).toBe(200);
    const seen = await expectStatus(
      identityApi(world.target).GET("/api/audit-events", {
        params: { query: { applicationId: app.id } },
        ...bearer(await adminToken(world.target, org)),
      }),
      200,
      "GET /api/audit-events",
    );
    const events = seen.items.filter((e) => e.type.startsWith("user.device_"));
    expect(events.map((e) => e.type)).toEqual(["user.device_denied", "user.device_approved"]);
    for (const e of events) {
      expect(e.actor).toEqual({ type: "user", id: world.user.id });
      expect(e.userId).toBe(world.user.id);
    }
    expect(events[1]!.details.scopes).toEqual(["openid", "email"]);
    // The codes are never written to the log.
    expect(JSON.stringify(events)).not.toContain(approved.json.user_code);
  });

  it("X-ID-DEV-7 discovery lists the device authorization endpoint and the grant type", async () => {
    const meta = (await (await fetch(`${world.target.url}/.well-known/oauth-authorization-server`)).json()) as Record<string, unknown>;
    expect(meta.device_authorization_endpoint).toBe(`${world.target.url}/oauth/device_authorization`);
    expect(meta.grant_types_supported).toContain(DEVICE_GRANT);
  });

  it("X-ID-DEV-6 oauth4webapi runs the whole flow (deviceAuthorizationRequest, processDeviceCodeResponse)", async () => {
    const issuer = new URL(world.target.url);
    const as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { [oauth.allowInsecureRequests]: true }));
    const client: oauth.Client = { client_id: world.tv.clientId };
    const auth = oauth.None();
    const options = { [oauth.allowInsecureRequests]: true };
    const params = new URLSearchParams({ scope: "openid" });
    const codes = await oauth.processDeviceAuthorizationResponse(
      as,
      client,
      await oauth.deviceAuthorizationRequest(as, client, auth, params, options),
    );
    expect(codes.user_code).toMatch(USER_CODE);
    await expect(
      oauth.processDeviceCodeResponse(as, client, await oauth.deviceCodeGrantRequest(as, client, auth, codes.device_code, options)),
    ).rejects.toMatchObject({ error: "authorization_pending" });
    await decide(await signedIn(), codes.user_code, "approve");
    // The client waits the interval between polls, as RFC 8628 §3.5 asks: on the service's clock
    // in process, in real time against a deployment (which has no clock to move).
    if (world.target.clock) world.target.clock.advance((codes.interval ?? 5) * 1000 + 1000);
    else await new Promise((resolve) => setTimeout(resolve, (codes.interval ?? 5) * 1000 + 1000));
    const tokens = await oauth.processDeviceCodeResponse(
      as,
      client,
      await oauth.deviceCodeGrantRequest(as, client, auth, codes.device_code, options),
    );
    expect(tokens.token_type).toBe("bearer");
    expect(tokens.access_token).toBeTruthy();
  }, 60_000);
});
