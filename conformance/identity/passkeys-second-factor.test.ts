/**
 * A passkey as the second step after a password (X-ID-PK-9): offered on `/signin/second-factor`,
 * the step's user's passkeys only, a challenge bound to the step, the second-factor limits, and
 * the policy (a second factor under `required` and for step-up, not by itself under `optional`).
 * Driven by a software authenticator (conformance/harness/webauthn.ts); codes with `otpauth`; time
 * moves on the injected clock, so these checks need the service in-process.
 */
import * as OTPAuth from "otpauth";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fetchFrom, freshLoopbackAddress } from "../harness/client-address.ts";
import { decodeJwt, readBody } from "../harness/http.ts";
import { createApp, createUser, type TestApp } from "../harness/identity-fixtures.ts";
import {
  authorizationPath,
  Browser,
  exchangeCode,
  formFields,
  type HttpResult,
  loginForm,
  pkcePair,
  redirectParams,
} from "../harness/oauth-flow.ts";
import { NEEDS, skipOnDeployment } from "../harness/skip.ts";
import { type IdentityTarget, identityTarget } from "../harness/targets.ts";
import { SoftwareAuthenticator } from "../harness/webauthn.ts";

let t: IdentityTarget;
let app: TestApp;
let strict: TestApp;
beforeAll(async () => {
  t = await identityTarget({ env: { LOGIN_MAX_FAILURES: "3" } });
  if (!t.clock) return;
  t.clock.freeze();
  app = await createApp(t);
  strict = await createApp(t);
  await t.service!.deps.factors.setApplicationPolicy(strict.id, "required");
});
afterAll(async () => t?.close());

type User = { id: string; email: string; password: string };
const pkce = pkcePair();
const OPTIONS = "/signin/second-factor/passkey/options";

/** A browser from a client address of its own, and JSON posts (the page script's `fetch`) from the same address with its cookies. */
function browser() {
  const send = fetchFrom(freshLoopbackAddress());
  const b = new Browser(t.url, send);
  const postJson = async (path: string, body: unknown) => {
    const res = await send(`${t.url}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", cookie: b.cookieHeader() },
      body: JSON.stringify(body),
    });
    return { status: res.status, ...(await readBody(res)) };
  };
  return { b, postJson };
}

const start = (b: Browser, extra: Record<string, string> = {}, a: TestApp = app) =>
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

async function passwordStep(b: Browser, user: User, a: TestApp = app, extra: Record<string, string> = {}) {
  return b.post("/oauth/authorize", loginForm(formFields((await start(b, extra, a)).text), user));
}

const authenticator = () => new SoftwareAuthenticator(new URL(t.url).hostname, new URL(t.url).origin);

/** A user signed in with a password (no second factor yet) who registers `device` on the passkeys page; the browser, for more. */
async function withPasskey(device: SoftwareAuthenticator, user?: User) {
  const who = user ?? (await createUser(t));
  const client = browser();
  expect((await passwordStep(client.b, who)).status).toBe(303);
  const { csrfToken } = formFields((await client.b.get("/account/passkeys")).text);
  const options = await client.postJson("/account/passkeys/options", { csrf_token: csrfToken });
  expect(options.status).toBe(200);
  const answer = await client.b.post("/account/passkeys", {
    csrf_token: csrfToken,
    credential: JSON.stringify(device.register(options.json)),
  });
  expect(answer.status).toBe(303);
  return { user: who, ...client };
}

/** Turns TOTP on in the signed-in browser `b`: its secret. */
async function enrolTotp(b: Browser) {
  const security = await b.get("/account/security");
  const started = await b.post("/account/security", { csrf_token: formFields(security.text).csrfToken, action: "start" });
  const secret = /<code id="totp-secret">([^<]+)<\/code>/.exec(started.text)![1]!.replace(/\s/g, "");
  const code = new OTPAuth.TOTP({ secret: OTPAuth.Secret.fromBase32(secret), digits: 6, period: 30 }).generate({
    timestamp: t.clock!.now().getTime(),
  });
  expect((await b.post("/account/security", { csrf_token: formFields(started.text).csrfToken, action: "confirm", code })).status).toBe(200);
  t.clock!.advance(60_000);
  return secret;
}

/** The second step's page after `afterPassword`, the options of its passkey form, and posting an assertion to the step. */
async function passkeyStep(client: ReturnType<typeof browser>, afterPassword: HttpResult, device: SoftwareAuthenticator) {
  expect(afterPassword.location).toMatch(/^\/signin\/second-factor/);
  const page = await client.b.get(afterPassword.location!);
  expect(page.status).toBe(200);
  const f = formFields(page.text);
  const options = await client.postJson(OPTIONS, { csrf_token: f.csrfToken, request_id: f.requestId });
  expect(options.status).toBe(200);
  const credential = JSON.stringify(device.assert(options.json.challenge));
  const post = (c = credential) =>
    client.b.post("/signin/second-factor", { csrf_token: f.csrfToken, request_id: f.requestId, credential: c });
  return { page, f, options: options.json, credential, post };
}

async function claimsOf(location: string, b: Browser, a: TestApp = app) {
  const tokens = await exchangeCode(
    t.url,
    { code: redirectParams(location).get("code")!, verifier: pkce.verifier, state: "s", location, browser: b },
    a,
  );
  expect(tokens.status).toBe(200);
  return decodeJwt(tokens.json.id_token).payload;
}

describe("a passkey as the second factor", () => {
  it("X-ID-PK-9 after a password, a user with an app and a passkey is offered both; the passkey completes the step (pwd hwk mfa, 2fa)", async (ctx) => {
    if (!t.clock) return skipOnDeployment(ctx, NEEDS.clock);
    const device = authenticator();
    const { user, b: enrolled } = await withPasskey(device);
    await enrolTotp(enrolled);
    const client = browser();
    const afterPassword = await passwordStep(client.b, user);
    const { page, options, post } = await passkeyStep(client, afterPassword, device);
    // Both ways are on the page; the passkey form is hidden until the one script finds WebAuthn (X-ID-PK-7).
    expect(page.text).toContain('name="code"');
    expect(page.text).toMatch(/<form method="post" action="\/signin\/second-factor" data-passkey="second-factor"[^>]* hidden>/);
    expect(page.text.match(/<script[^>]*>/g)).toEqual(['<script type="module" src="/assets/passkeys.js">']);
    const csp = page.headers.get("content-security-policy") ?? "";
    expect(csp).toContain(`script-src ${t.url}/assets/passkeys.js;`);
    expect(csp).toContain("connect-src 'self'");
    // Only this user's passkeys are offered, user verification required.
    expect(options.allowCredentials.map((c: { id: string }) => c.id)).toEqual([device.id]);
    expect(options.userVerification).toBe("required");
    const done = await post();
    expect(done.status).toBe(303);
    expect(done.location!.startsWith(app.redirectUri)).toBe(true);
    const claims = await claimsOf(done.location!, client.b);
    expect(claims.sub).toBe(user.id);
    expect(claims.amr).toEqual(["pwd", "hwk", "mfa"]);
    expect(claims.acr).toBe("urn:identity:loa:2fa");
    // The step ended: the same assertion (and the step) cannot be used again.
    expect((await post()).status).toBe(403);
  });

  it("X-ID-PK-9 a passkey of another account, a challenge of the login page or of another step, a replay or a late answer is refused", async (ctx) => {
    if (!t.clock) return skipOnDeployment(ctx, NEEDS.clock);
    // Each user sees at most two refusals here, below the second-factor limits (X-ID-MFA-8).
    const stepOf = async (user: User, device: SoftwareAuthenticator) => {
      const client = browser();
      return { client, ...(await passkeyStep(client, await passwordStep(client.b, user, strict), device)) };
    };
    const device = authenticator();
    const { user } = await withPasskey(device);
    const other = authenticator();
    await withPasskey(other);
    const step = await stepOf(user, device);
    // Another account's passkey answering this step's challenge.
    const foreign = await step.post(JSON.stringify(other.assert(step.options.challenge)));
    expect(foreign.status).toBe(400);
    expect(foreign.text).toContain("not registered here");
    // That refusal consumed the challenge (X-ID-PK-2): the right passkey on it is refused too.
    const replay = await step.post();
    expect(replay.status).toBe(400);
    expect(replay.text).toContain("expired or was already used");

    const device2 = authenticator();
    const { user: user2 } = await withPasskey(device2);
    const step2 = await stepOf(user2, device2);
    // A challenge of the login page's passwordless sign-in is not this step's.
    const login = formFields((await start(step2.client.b)).text);
    const signIn = await step2.client.postJson("/oauth/authorize/passkey/options", {
      csrf_token: login.csrfToken,
      request_id: login.requestId,
    });
    expect(signIn.status).toBe(200);
    expect((await step2.post(JSON.stringify(device2.assert(signIn.json.challenge)))).status).toBe(400);
    // Nor is a challenge of another step (another browser's sign-in of the same user).
    const otherStep = await stepOf(user2, device2);
    expect((await step2.post(otherStep.credential)).status).toBe(400);
    // The other step's own answer still works: refusals elsewhere did not consume it.
    expect((await otherStep.post()).status).toBe(303);

    // Five minutes on, an answer to the options is late (the step itself lives longer).
    const device3 = authenticator();
    const { user: user3 } = await withPasskey(device3);
    const step3 = await stepOf(user3, device3);
    t.clock.advance(5 * 60_000 + 1000);
    const late = await step3.post();
    expect(late.status).toBe(400);
    expect(late.text).toContain("expired or was already used");
  });

  it("X-ID-PK-9 under `required` a user with a passkey and no app does the passkey step instead of enrolling; under `optional` a password alone signs in", async (ctx) => {
    if (!t.clock) return skipOnDeployment(ctx, NEEDS.clock);
    const device = authenticator();
    const { user } = await withPasskey(device);
    // Optional (the default): a passkey does not turn the second step on by itself.
    const relaxed = browser();
    const direct = await passwordStep(relaxed.b, user);
    expect(direct.status).toBe(303);
    expect(direct.location!.startsWith(app.redirectUri)).toBe(true);
    const oneFactor = await claimsOf(direct.location!, relaxed.b);
    expect(oneFactor.amr).toEqual(["pwd"]);
    expect(oneFactor.acr).toBe("urn:identity:loa:1fa");
    // Required: the passkey step, no QR code, no code form; without WebAuthn the page says why.
    const client = browser();
    const afterPassword = await passwordStep(client.b, user, strict);
    const { page, post } = await passkeyStep(client, afterPassword, device);
    expect(page.text).not.toContain("Set up two-step verification");
    expect(page.text).not.toContain('name="code"');
    expect(page.text).toContain('id="passkey-unavailable"');
    // A code posted anyway is a wrong code, never an enrolment.
    const f = formFields(page.text);
    const code = await client.b.post("/signin/second-factor", { csrf_token: f.csrfToken, request_id: f.requestId, code: "123456" });
    expect(code.status).toBe(400);
    expect(code.text).not.toContain("totp-secret");
    const done = await post();
    expect(done.status).toBe(303);
    expect(done.location!.startsWith(strict.redirectUri)).toBe(true);
    const claims = await claimsOf(done.location!, client.b, strict);
    expect(claims.amr).toEqual(["pwd", "hwk", "mfa"]);
    expect(claims.acr).toBe("urn:identity:loa:2fa");
  });

  it("X-ID-PK-9 `acr_values` asking for two factors asks a passkey user's one-factor session for the passkey step", async (ctx) => {
    if (!t.clock) return skipOnDeployment(ctx, NEEDS.clock);
    const device = authenticator();
    const { user, ...client } = await withPasskey(device);
    const stepUp = await start(client.b, { acr_values: "urn:identity:loa:2fa" });
    expect(stepUp.status).toBe(302);
    const { post } = await passkeyStep(client, stepUp, device);
    const done = await post();
    expect(done.status).toBe(303);
    const claims = await claimsOf(done.location!, client.b);
    expect(claims.sub).toBe(user.id);
    expect(claims.amr).toEqual(["pwd", "hwk", "mfa"]);
  });

  it("X-ID-PK-9 refused passkeys count as wrong codes under the second-factor limits: 429 with Retry-After, even for the right passkey", async (ctx) => {
    if (!t.clock) return skipOnDeployment(ctx, `${NEEDS.clock}; ${NEEDS.clientAddresses}`);
    const device = authenticator();
    const { user } = await withPasskey(device);
    const client = browser();
    const afterPassword = await passwordStep(client.b, user, strict);
    // Two refused passkeys and a wrong code: the limit (LOGIN_MAX_FAILURES=3) is reached.
    for (const o of [{ badSignature: true }, { userVerified: false }]) {
      const step = await passkeyStep(client, afterPassword, device);
      expect((await step.post(JSON.stringify(device.assert(step.options.challenge, o)))).status).toBe(400);
    }
    const f = formFields((await client.b.get(afterPassword.location!)).text);
    expect(
      (await client.b.post("/signin/second-factor", { csrf_token: f.csrfToken, request_id: f.requestId, code: "000000" })).status,
    ).toBe(400);
    const locked = await (await passkeyStep(client, afterPassword, device)).post();
    expect(locked.status).toBe(429);
    expect(Number(locked.headers.get("retry-after"))).toBeGreaterThan(60);
    // Nothing was checked: the passkey's challenge is still unused, and after the window it works.
    t.clock.advance(15 * 60_000 + 1000);
    const retry = browser();
    const done = await (await passkeyStep(retry, await passwordStep(retry.b, user, strict), device)).post();
    expect(done.status).toBe(303);
  });

  it("X-ID-PK-9 the options need the page's CSRF token (403) and this browser's step of the request (404); unknown fields are 400", async (ctx) => {
    if (!t.clock) return skipOnDeployment(ctx, NEEDS.clock);
    const device = authenticator();
    const { user } = await withPasskey(device);
    const client = browser();
    const afterPassword = await passwordStep(client.b, user, strict);
    const f = formFields((await client.b.get(afterPassword.location!)).text);
    const forged = await client.postJson(OPTIONS, { csrf_token: "forged", request_id: f.requestId });
    expect(forged.status).toBe(403);
    expect(forged.json.code).toBe("forbidden");
    const unknown = await client.postJson(OPTIONS, { csrf_token: f.csrfToken, request_id: "00000000-0000-4000-8000-000000000000" });
    expect(unknown.status).toBe(404);
    expect(unknown.json.code).toBe("not_found");
    expect((await client.postJson(OPTIONS, { csrf_token: f.csrfToken, request_id: f.requestId, extra: 1 })).status).toBe(400);
    // Another browser (no step cookie) with a CSRF token of its own: no step here.
    const stranger = browser();
    const own = formFields((await start(stranger.b)).text);
    expect((await stranger.postJson(OPTIONS, { csrf_token: own.csrfToken, request_id: f.requestId })).status).toBe(404);
  });
});
