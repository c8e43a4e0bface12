/**
 * A second factor (X-ID-MFA-1..8): TOTP enrolment on the Security page, the sign-in's second step,
 * recovery codes, amr/acr/auth_time in ID tokens, step-up, max_age, the policy and the limits.
 * Codes are computed with `otpauth`, an implementation independent of the server's; time moves on
 * the injected clock, so these checks need the service in-process.
 */
import * as OTPAuth from "otpauth";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { identityTarget, type IdentityTarget } from "../harness/targets.ts";
import { fetchFrom, freshLoopbackAddress } from "../harness/client-address.ts";
import { createApp, createUser, type TestApp } from "../harness/identity-fixtures.ts";
import { decodeJwt } from "../harness/http.ts";
import {
  authorizationPath,
  Browser,
  exchangeCode,
  formFields,
  loginForm,
  pkcePair,
  redirectParams,
  type HttpResult,
} from "../harness/oauth-flow.ts";
import { NEEDS, skipOnDeployment } from "../harness/skip.ts";

let t: IdentityTarget;
let app: TestApp;
beforeAll(async () => {
  t = await identityTarget({ env: { LOGIN_MAX_FAILURES: "3" } });
  if (!t.clock) return;
  t.clock.freeze();
  app = await createApp(t);
});
afterAll(async () => t?.close());

type User = { id: string; email: string; password: string };
const pkce = pkcePair();

/** The authenticator app of a test: the enrolled secret, its codes at the service's time. */
const totpOf = (secret: string) =>
  new OTPAuth.TOTP({ secret: OTPAuth.Secret.fromBase32(secret.replace(/\s/g, "")), algorithm: "SHA1", digits: 6, period: 30 });
const codeAt = (secret: string, offsetSteps = 0) => totpOf(secret).generate({ timestamp: t.clock!.now().getTime() + offsetSteps * 30_000 });

const startAuthorization = (b: Browser, extra: Record<string, string> = {}, a: TestApp = app) =>
  b.get(
    authorizationPath({
      clientId: a.clientId,
      redirectUri: a.redirectUri,
      challenge: pkce.challenge,
      scope: "openid email",
      state: "s",
      extra,
    }),
  );

/** The login page's password step: the 303 that follows it. */
async function passwordStep(b: Browser, user: User, extra: Record<string, string> = {}, a: TestApp = app) {
  const f = formFields((await startAuthorization(b, extra, a)).text);
  return b.post("/oauth/authorize", loginForm(f, user));
}

/** Signs in without a second factor (a session for the Security page). */
async function signedIn(user: User, address = freshLoopbackAddress()) {
  const b = new Browser(t.url, fetchFrom(address));
  const done = await passwordStep(b, user);
  expect(done.status).toBe(303);
  return b;
}

const pageCsrf = (html: string) => formFields(html).csrfToken;
const secretOf = (html: string) => /<code id="totp-secret">([^<]+)<\/code>/.exec(html)?.[1]?.replace(/\s/g, "") ?? "";
const recoveryCodesOf = (html: string) => [...html.matchAll(/<li><code>([0-9a-z-]+)<\/code><\/li>/g)].map((m) => m[1]!);

/** Enrols TOTP on the Security page: the secret and the recovery codes. */
async function enrol(b: Browser) {
  const security = await b.get("/account/security");
  expect(security.status).toBe(200);
  const started = await b.post("/account/security", { csrf_token: pageCsrf(security.text), action: "start" });
  expect(started.status).toBe(200);
  const secret = secretOf(started.text);
  const confirmed = await b.post("/account/security", { csrf_token: pageCsrf(started.text), action: "confirm", code: codeAt(secret) });
  expect(confirmed.status).toBe(200);
  return { secret, recoveryCodes: recoveryCodesOf(confirmed.text) };
}

/** A user with TOTP on, enrolled in a browser of their own; the clock then moves two steps on (the enrolment's code is used up). */
async function enrolledUser() {
  const user = await createUser(t);
  const { secret, recoveryCodes } = await enrol(await signedIn(user));
  t.clock!.advance(60_000);
  return { user, secret, recoveryCodes };
}

/** The second step's form posted with `code`. */
async function secondStep(b: Browser, afterPassword: HttpResult, code: string) {
  const page = await b.get(afterPassword.location!);
  expect(page.status).toBe(200);
  const f = formFields(page.text);
  return b.post("/signin/second-factor", { csrf_token: f.csrfToken, request_id: f.requestId, code });
}

async function idTokenOf(location: string, b: Browser) {
  const code = redirectParams(location).get("code")!;
  const res = await exchangeCode(t.url, { code, verifier: pkce.verifier, state: "s", location, browser: b }, app);
  expect(res.status).toBe(200);
  return decodeJwt(res.json.id_token).payload;
}

describe("second factor", () => {
  it("X-ID-MFA-1 a TOTP code is accepted in its step and one step either side, and once: a replayed code fails", async (ctx) => {
    if (!t.clock) return skipOnDeployment(ctx, NEEDS.clock);
    const { user, secret } = await enrolledUser();
    const b = new Browser(t.url, fetchFrom(freshLoopbackAddress()));
    // Two steps old: refused; one step old: accepted.
    const first = await passwordStep(b, user);
    expect((await secondStep(b, first, codeAt(secret, -2))).status).toBe(400);
    const previous = codeAt(secret, -1);
    const ok = await secondStep(b, first, previous);
    expect(ok.status).toBe(303);
    // The same code again, in another browser, within its window: refused (replay).
    const b2 = new Browser(t.url, fetchFrom(freshLoopbackAddress()));
    const again = await secondStep(b2, await passwordStep(b2, user), previous);
    expect(again.status).toBe(400);
    expect(again.text).toContain("used already");
    // The current code is a later step: accepted.
    const b3 = new Browser(t.url, fetchFrom(freshLoopbackAddress()));
    expect((await secondStep(b3, await passwordStep(b3, user), codeAt(secret))).status).toBe(303);
    // The secret is stored sealed, never as itself.
    const row = await t.service!.ctx.storage.factors.find(`totp:${user.id}`);
    expect(row!.secret).not.toContain(secret);
  });

  it("X-ID-MFA-1 of two requests racing with one code, exactly one is accepted", async (ctx) => {
    if (!t.clock) return skipOnDeployment(ctx, NEEDS.clock);
    const { user, secret } = await enrolledUser();
    const browsers = [0, 1].map(() => new Browser(t.url, fetchFrom(freshLoopbackAddress())));
    const steps = await Promise.all(browsers.map((b) => passwordStep(b, user)));
    const code = codeAt(secret);
    const pages = await Promise.all(browsers.map((b, i) => b.get(steps[i]!.location!)));
    const answers = await Promise.all(
      browsers.map((b, i) => {
        const f = formFields(pages[i]!.text);
        return b.post("/signin/second-factor", { csrf_token: f.csrfToken, request_id: f.requestId, code });
      }),
    );
    expect(answers.map((a) => a.status).sort()).toEqual([303, 400]);
  });

  it("X-ID-MFA-2 the Security page shows a QR code and the secret; the factor is on only after a current code; removal needs the password or a code", async (ctx) => {
    if (!t.clock) return skipOnDeployment(ctx, NEEDS.clock);
    const user = await createUser(t);
    const b = await signedIn(user);
    const security = await b.get("/account/security");
    const started = await b.post("/account/security", { csrf_token: pageCsrf(security.text), action: "start" });
    expect(started.text).toContain("<svg");
    const secret = secretOf(started.text);
    expect(secret).toMatch(/^[A-Z2-7]{32}$/);
    // Not on yet: signing in asks for no code.
    const before = new Browser(t.url, fetchFrom(freshLoopbackAddress()));
    expect(redirectParams((await passwordStep(before, user)).location).get("code")).toBeTruthy();
    // A wrong code: the page again with the same secret.
    const wrong = await b.post("/account/security", { csrf_token: pageCsrf(started.text), action: "confirm", code: "000000" });
    expect(wrong.status).toBe(400);
    expect(secretOf(wrong.text)).toBe(secret);
    const on = await b.post("/account/security", { csrf_token: pageCsrf(started.text), action: "confirm", code: codeAt(secret) });
    expect(on.status).toBe(200);
    expect(on.text).toContain("Two-step verification is on");
    const csrf = pageCsrf((await b.get("/account/security")).text);
    // Starting again while on is refused with a message.
    expect((await b.post("/account/security", { csrf_token: csrf, action: "start" })).status).toBe(400);
    // Removal: a wrong password is refused; the right one removes it.
    const refused = await b.post("/account/security", { csrf_token: csrf, action: "remove", password: "wrong-password" });
    expect(refused.status).toBe(400);
    const removed = await b.post("/account/security", { csrf_token: csrf, action: "remove", password: user.password });
    expect(removed.status).toBe(200);
    expect(removed.text).toContain("was removed");
    const after = new Browser(t.url, fetchFrom(freshLoopbackAddress()));
    expect(redirectParams((await passwordStep(after, user)).location).get("code")).toBeTruthy();
  });

  it("X-ID-MFA-2 the Security page needs a session (sign-in, X-ID-MFA-10; a form 401) and a CSRF token (403)", async (ctx) => {
    if (!t.clock) return skipOnDeployment(ctx, NEEDS.clock);
    const anonymous = new Browser(t.url);
    const signIn = await anonymous.get("/account/security");
    expect(signIn.status).toBe(302);
    expect(new URL(signIn.location!, t.url).searchParams.get("client_id")).toBe("identity-account");
    // A CSRF token of another hosted page (the login page) is valid for this browser.
    const security = await startAuthorization(anonymous);
    expect((await anonymous.post("/account/security", { csrf_token: pageCsrf(security.text), action: "start" })).status).toBe(401);
    expect((await anonymous.post("/account/security", { csrf_token: "forged", action: "start" })).status).toBe(403);
  });

  it("X-ID-MFA-3 ten recovery codes are shown once; a recovery code works once; regenerating ends the old ones", async (ctx) => {
    if (!t.clock) return skipOnDeployment(ctx, NEEDS.clock);
    const { user, secret, recoveryCodes } = await enrolledUser();
    expect(recoveryCodes).toHaveLength(10);
    expect(new Set(recoveryCodes).size).toBe(10);
    const b = new Browser(t.url, fetchFrom(freshLoopbackAddress()));
    const used = await secondStep(b, await passwordStep(b, user), recoveryCodes[0]!);
    expect(used.status).toBe(303);
    expect(used.location!.startsWith(app.redirectUri)).toBe(true);
    const b2 = new Browser(t.url, fetchFrom(freshLoopbackAddress()));
    expect((await secondStep(b2, await passwordStep(b2, user), recoveryCodes[0]!)).status).toBe(400);
    // The Security page counts what is left; regenerating with a current code ends the old ones.
    const security = await b.get("/account/security");
    expect(security.text).toContain("9 recovery codes left");
    const fresh = await b.post("/account/security", { csrf_token: pageCsrf(security.text), action: "regenerate", code: codeAt(secret) });
    expect(fresh.status).toBe(200);
    const newCodes = recoveryCodesOf(fresh.text);
    expect(newCodes).toHaveLength(10);
    const b3 = new Browser(t.url, fetchFrom(freshLoopbackAddress()));
    expect((await secondStep(b3, await passwordStep(b3, user), recoveryCodes[1]!)).status).toBe(400);
    const b4 = new Browser(t.url, fetchFrom(freshLoopbackAddress()));
    expect((await secondStep(b4, await passwordStep(b4, user), newCodes[0]!)).status).toBe(303);
  });

  it("X-ID-MFA-4 after the password, a user with a factor gets no session but the second step, bound to the request and the browser", async (ctx) => {
    if (!t.clock) return skipOnDeployment(ctx, NEEDS.clock);
    const { user, secret } = await enrolledUser();
    const b = new Browser(t.url, fetchFrom(freshLoopbackAddress()));
    const afterPassword = await passwordStep(b, user);
    expect(afterPassword.status).toBe(303);
    expect(afterPassword.location).toMatch(/^\/signin\/second-factor\?request_id=/);
    expect(b.cookies.has("identity_session")).toBe(false);
    expect(b.cookies.has("identity_second_factor")).toBe(true);
    // Another browser with the request id but not the cookie: no step.
    const other = new Browser(t.url);
    expect((await other.get(afterPassword.location!)).status).toBe(400);
    const page = await b.get(afterPassword.location!);
    const f = formFields(page.text);
    expect((await b.post("/signin/second-factor", { csrf_token: "forged", request_id: f.requestId, code: codeAt(secret) })).status).toBe(
      403,
    );
    const done = await b.post("/signin/second-factor", { csrf_token: f.csrfToken, request_id: f.requestId, code: codeAt(secret) });
    expect(done.status).toBe(303);
    expect(b.cookies.has("identity_session")).toBe(true);
    expect(b.cookies.has("identity_second_factor")).toBe(false);
    // The step is over: posting again finds none.
    expect((await b.post("/signin/second-factor", { csrf_token: f.csrfToken, request_id: f.requestId, code: codeAt(secret) })).status).toBe(
      403,
    );
  });

  it("X-ID-MFA-5 ID tokens carry amr, auth_time and acr: pwd alone is 1fa, pwd+otp is 2fa; discovery lists the acr values", async (ctx) => {
    if (!t.clock) return skipOnDeployment(ctx, NEEDS.clock);
    const plain = await createUser(t);
    const b1 = new Browser(t.url, fetchFrom(freshLoopbackAddress()));
    const one = await idTokenOf((await passwordStep(b1, plain)).location!, b1);
    expect(one.amr).toEqual(["pwd"]);
    expect(one.acr).toBe("urn:identity:loa:1fa");
    expect(one.auth_time).toBe(Math.floor(t.clock.now().getTime() / 1000));

    const { user, secret } = await enrolledUser();
    const b2 = new Browser(t.url, fetchFrom(freshLoopbackAddress()));
    const done = await secondStep(b2, await passwordStep(b2, user), codeAt(secret));
    const two = await idTokenOf(done.location!, b2);
    expect(two.amr).toEqual(["pwd", "otp", "mfa"]);
    expect(two.acr).toBe("urn:identity:loa:2fa");
    const discovery = (await new Browser(t.url).get("/.well-known/openid-configuration")).json;
    expect(discovery.acr_values_supported).toEqual(["urn:identity:loa:1fa", "urn:identity:loa:2fa"]);
    expect(discovery.claims_supported).toEqual(expect.arrayContaining(["amr", "acr", "auth_time"]));
  });

  it("X-ID-MFA-6 acr_values asking for two factors steps a one-factor session up to the second step (prompt=none: login_required)", async (ctx) => {
    if (!t.clock) return skipOnDeployment(ctx, NEEDS.clock);
    const user = await createUser(t);
    const b = await signedIn(user);
    const { secret } = await enrol(b);
    t.clock.advance(60_000);
    // The session began with the password only.
    const none = await startAuthorization(b, { acr_values: "urn:identity:loa:2fa", prompt: "none" });
    expect(redirectParams(none.location).get("error")).toBe("login_required");
    const stepUp = await startAuthorization(b, { acr_values: "urn:identity:loa:2fa" });
    expect(stepUp.status).toBe(302);
    expect(stepUp.location).toMatch(/^\/signin\/second-factor/);
    const page = await b.get(stepUp.location!);
    const f = formFields(page.text);
    const done = await b.post("/signin/second-factor", { csrf_token: f.csrfToken, request_id: f.requestId, code: codeAt(secret) });
    expect(done.status).toBe(303);
    expect((await idTokenOf(done.location!, b)).acr).toBe("urn:identity:loa:2fa");
    // Now two factors: the same request goes straight back.
    expect(redirectParams((await startAuthorization(b, { acr_values: "urn:identity:loa:2fa" })).location).get("code")).toBeTruthy();
  });

  it("X-ID-MFA-6 max_age older than the sign-in, max_age=0 and prompt=login sign in again; a malformed max_age is invalid_request", async (ctx) => {
    if (!t.clock) return skipOnDeployment(ctx, NEEDS.clock);
    const user = await createUser(t);
    const b = await signedIn(user);
    expect((await startAuthorization(b, { max_age: "60" })).status).toBe(302);
    t.clock.advance(61_000);
    expect((await startAuthorization(b, { max_age: "60" })).text).toContain('type="password"');
    expect((await startAuthorization(b, { max_age: "3600" })).status).toBe(302);
    expect((await startAuthorization(b, { max_age: "0" })).text).toContain('type="password"');
    expect((await startAuthorization(b, { prompt: "login" })).text).toContain('type="password"');
    expect(redirectParams((await startAuthorization(b, { max_age: "60", prompt: "none" })).location).get("error")).toBe("login_required");
    expect(redirectParams((await startAuthorization(b, { max_age: "soon" })).location).get("error")).toBe("invalid_request");
  });

  it("X-ID-MFA-7 an application that requires a second factor makes a user without one enrol, shows the recovery codes once, then continues", async (ctx) => {
    if (!t.clock) return skipOnDeployment(ctx, NEEDS.clock);
    const strict = await createApp(t);
    await t.service!.deps.factors.setApplicationPolicy(strict.id, "required");
    expect(await t.service!.deps.factors.policyOf(strict.id)).toBe("required");
    expect(await t.service!.deps.factors.policyOf(app.id)).toBe("optional");
    const user = await createUser(t);
    const b = new Browser(t.url, fetchFrom(freshLoopbackAddress()));
    const afterPassword = await passwordStep(b, user, {}, strict);
    expect(afterPassword.location).toMatch(/^\/signin\/second-factor/);
    const page = await b.get(afterPassword.location!);
    expect(page.text).toContain("Set up two-step verification");
    const secret = secretOf(page.text);
    const f = formFields(page.text);
    const wrong = await b.post("/signin/second-factor", { csrf_token: f.csrfToken, request_id: f.requestId, code: "000000" });
    expect(wrong.status).toBe(400);
    expect(secretOf(wrong.text)).toBe(secret);
    const done = await b.post("/signin/second-factor", { csrf_token: f.csrfToken, request_id: f.requestId, code: codeAt(secret) });
    expect(done.status).toBe(200);
    expect(recoveryCodesOf(done.text)).toHaveLength(10);
    const next = /<a class="button" href="([^"]+)"/.exec(done.text)![1]!.replace(/&amp;/g, "&");
    expect(next.startsWith(strict.redirectUri)).toBe(true);
    expect(b.cookies.has("identity_session")).toBe(true);
    // The organization's policy applies when the application has none of its own.
    const org = await t.createOrganization!();
    const orgApp = await createApp(t, { organizationId: org.organizationId });
    await t.service!.deps.factors.setOrganizationPolicy(org.organizationId, "required");
    expect(await t.service!.deps.factors.policyOf(orgApp.id)).toBe("required");
    await t.service!.deps.factors.setApplicationPolicy(orgApp.id, "optional");
    expect(await t.service!.deps.factors.policyOf(orgApp.id)).toBe("optional");
  });

  it("X-ID-MFA-8 the Security page's password is limited as the sign-in is: over the limit 429 with Retry-After, the right password checked not at all", async (ctx) => {
    if (!t.clock) return skipOnDeployment(ctx, `${NEEDS.clock}; ${NEEDS.clientAddresses}`);
    const user = await createUser(t);
    const b = await signedIn(user); // signed in before the factor is on, so the page is open to it
    await enrol(b);
    t.clock.advance(60_000);
    const csrf = pageCsrf((await b.get("/account/security")).text);
    for (let i = 0; i < 3; i++)
      expect((await b.post("/account/security", { csrf_token: csrf, action: "remove", password: "wrong-password" })).status).toBe(400);
    const locked = await b.post("/account/security", { csrf_token: csrf, action: "remove", password: user.password });
    expect(locked.status).toBe(429);
    expect(Number(locked.headers.get("retry-after"))).toBeGreaterThan(0);
    // Nothing was removed: the factor still asks for its code at the next sign-in from elsewhere.
    expect((await passwordStep(new Browser(t.url, fetchFrom(freshLoopbackAddress())), user)).location).toMatch(/^\/signin\/second-factor/);
  });

  it("X-ID-MFA-8 wrong codes count per account and address: the limit answers 429 with Retry-After and checks nothing, even the right code", async (ctx) => {
    if (!t.clock) return skipOnDeployment(ctx, `${NEEDS.clock}; ${NEEDS.clientAddresses}`);
    const { user, secret } = await enrolledUser();
    const address = freshLoopbackAddress();
    const b = new Browser(t.url, fetchFrom(address));
    const afterPassword = await passwordStep(b, user);
    for (let i = 0; i < 3; i++) expect((await secondStep(b, afterPassword, "000000")).status).toBe(400);
    const locked = await secondStep(b, afterPassword, codeAt(secret));
    expect(locked.status).toBe(429);
    expect(Number(locked.headers.get("retry-after"))).toBeGreaterThan(60);
    expect(locked.text).toContain("Too many wrong codes");
    // Once the oldest failure leaves the window, the right code works again from that address.
    t.clock.advance(15 * 60_000 + 1000);
    const retry = await passwordStep(b, user);
    expect((await secondStep(b, retry, codeAt(secret))).status).toBe(303);
  });
});
