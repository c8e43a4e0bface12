/** Passkeys (WebAuthn): X-ID-PK-1..8, driven by a software authenticator (conformance/harness/webauthn.ts). */
import * as OTPAuth from "otpauth";
import { describe, expect, it } from "vitest";
import { createUser, type TestApp } from "../harness/identity-fixtures.ts";
import { decodeJwt, readBody } from "../harness/http.ts";
import { authorizationPath, Browser, exchangeCode, formFields, loginForm, pkcePair, redirectParams } from "../harness/oauth-flow.ts";
import { NEEDS, skipOnDeployment } from "../harness/skip.ts";
import { SoftwareAuthenticator } from "../harness/webauthn.ts";
import { fileWorld, identityWorld, type TestUser } from "../harness/worlds.ts";

const world = fileWorld(() => identityWorld({ apps: { app: { name: "Passkey App" } } }));
const pkce = pkcePair();

const start = (b: Browser, a: TestApp) =>
  b.get(
    authorizationPath({
      clientId: a.clientId,
      redirectUri: a.redirectUri,
      challenge: pkce.challenge,
      method: "S256",
      scope: "openid email",
      state: "s",
    }),
  );

/** A browser signed in with `user`'s password (the session the passkeys page needs). */
async function signedIn(user: TestUser): Promise<Browser> {
  const b = new Browser(world.target.url);
  const f = formFields((await start(b, world.app)).text);
  expect((await b.post("/oauth/authorize", loginForm(f, user))).status).toBe(303);
  return b;
}

/** A JSON POST with the browser's cookies (the page script's `fetch`). */
async function postJson(b: Browser, path: string, body: unknown) {
  const res = await fetch(`${world.target.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", cookie: b.cookieHeader() },
    body: JSON.stringify(body),
  });
  return { status: res.status, headers: res.headers, ...(await readBody(res)) };
}

const authenticator = () => {
  const origin = new URL(world.target.url);
  return new SoftwareAuthenticator(origin.hostname, origin.origin);
};

/** Registers a passkey for the signed-in browser through the page, as its script does. */
async function register(b: Browser, device: SoftwareAuthenticator, name = "Laptop") {
  const { csrfToken } = formFields((await b.get("/account/passkeys")).text);
  const options = await postJson(b, "/account/passkeys/options", { csrf_token: csrfToken });
  expect(options.status).toBe(200);
  const credential = JSON.stringify(device.register(options.json));
  return {
    options: options.json,
    csrfToken,
    credential,
    answer: await b.post("/account/passkeys", { csrf_token: csrfToken, name, credential }),
  };
}

/** A login page's passkey sign-in: the options for its request, the authenticator's assertion, the form. */
async function passkeySignIn(b: Browser, device: SoftwareAuthenticator, o: Parameters<SoftwareAuthenticator["assert"]>[1] = {}) {
  const page = await start(b, world.app);
  const f = formFields(page.text);
  const options = await postJson(b, "/oauth/authorize/passkey/options", { csrf_token: f.csrfToken, request_id: f.requestId });
  expect(options.status).toBe(200);
  const credential = JSON.stringify(device.assert(options.json.challenge, o));
  return b.post("/oauth/authorize/passkey", { csrf_token: f.csrfToken, request_id: f.requestId, credential });
}

const passkeyIds = (html: string) => [...html.matchAll(/action="\/account\/passkeys\/([0-9a-f-]{36})\/rename"/g)].map((m) => m[1]!);

describe("passkeys", () => {
  it("X-ID-PK-1 a signed-in user registers a discoverable passkey (user verification required, rp id the public host)", async () => {
    const user = await createUser(world.target);
    const b = await signedIn(user);
    const device = authenticator();
    const { options, answer, csrfToken, credential } = await register(b, device, "Work laptop");
    expect(options.rp.id).toBe(new URL(world.target.url).hostname);
    expect(options.authenticatorSelection).toMatchObject({ residentKey: "required", userVerification: "required" });
    expect(options.attestation).toBe("none");
    expect(answer.status).toBe(303);
    expect(answer.location).toBe("/account/passkeys");
    const page = await b.get("/account/passkeys");
    expect(page.status).toBe(200);
    expect(page.text).toContain("Work laptop");
    // The same credential again, under a fresh challenge: already registered.
    const again = await postJson(b, "/account/passkeys/options", { csrf_token: csrfToken });
    expect(again.json.excludeCredentials.map((c: { id: string }) => c.id)).toEqual([device.id]);
    const dup = await b.post("/account/passkeys", { csrf_token: csrfToken, credential: JSON.stringify(device.register(again.json)) });
    expect(dup.status).toBe(400);
    expect(dup.text).toContain("already registered");
    void credential;
  });

  it("X-ID-PK-2 a challenge is single-use, bound to its session or request, and expires after 5 minutes", async (ctx) => {
    const user = await createUser(world.target);
    const b = await signedIn(user);
    const device = authenticator();
    const { answer, csrfToken, credential } = await register(b, device);
    expect(answer.status).toBe(303);
    // Replayed: the challenge was consumed.
    const replay = await b.post("/account/passkeys", { csrf_token: csrfToken, credential });
    expect(replay.status).toBe(400);
    expect(replay.text).toContain("expired or was already used");
    // Another session's challenge (the same user signed in elsewhere) is not this session's.
    const other = await signedIn(user);
    const otherCsrf = formFields((await other.get("/account/passkeys")).text).csrfToken;
    const foreign = await postJson(other, "/account/passkeys/options", { csrf_token: otherCsrf });
    const stolen = JSON.stringify(authenticator().register(foreign.json));
    expect((await b.post("/account/passkeys", { csrf_token: csrfToken, credential: stolen })).status).toBe(400);
    // A sign-in challenge of one authorization request does not sign in another.
    const c = new Browser(world.target.url);
    const first = formFields((await start(c, world.app)).text);
    const second = formFields((await start(c, world.app)).text);
    const options = await postJson(c, "/oauth/authorize/passkey/options", { csrf_token: first.csrfToken, request_id: first.requestId });
    const cross = JSON.stringify(device.assert(options.json.challenge));
    const crossed = await c.post("/oauth/authorize/passkey", {
      csrf_token: second.csrfToken,
      request_id: second.requestId,
      credential: cross,
    });
    expect(crossed.status).toBe(400);
    if (!world.target.clock) return skipOnDeployment(ctx, NEEDS.clock);
    const late = await postJson(c, "/oauth/authorize/passkey/options", { csrf_token: second.csrfToken, request_id: second.requestId });
    world.target.clock.advance(5 * 60_000 + 1000);
    const expired = await c.post("/oauth/authorize/passkey", {
      csrf_token: second.csrfToken,
      request_id: second.requestId,
      credential: JSON.stringify(device.assert(late.json.challenge)),
    });
    expect(expired.status).toBe(400);
    expect(expired.text).toContain("expired or was already used");
  });

  it("X-ID-PK-3 signing in with a passkey completes the authorization flow and records the passkey on the session", async () => {
    const user = await createUser(world.target);
    const device = authenticator();
    expect((await register(await signedIn(user), device)).answer.status).toBe(303);
    const b = new Browser(world.target.url);
    const done = await passkeySignIn(b, device);
    expect(done.status).toBe(303);
    expect(done.headers.getSetCookie().some((c) => c.startsWith("identity_session="))).toBe(true);
    const code = redirectParams(done.location).get("code");
    expect(code).toBeTruthy();
    const tokens = await exchangeCode(
      world.target.url,
      { code: code!, verifier: pkce.verifier, state: "s", location: done.location!, browser: b },
      world.app,
    );
    expect(tokens.status).toBe(200);
    expect(JSON.parse(Buffer.from(tokens.json.id_token.split(".")[1], "base64url").toString()).sub).toBe(user.id);
    // The session says how it signed in (RFC 8176): this authenticator's key is device-bound (no
    // backup flag), so `hwk`, and user verification makes it `mfa`.
    const session = await world.target.service?.deps.oauth.authenticateSession({ cookie: b.cookieHeader() });
    if (session) expect(session.amr).toEqual(["hwk", "mfa"]);
    // The page shows the last use.
    const page = await (await signedIn(user)).get("/account/passkeys");
    expect(page.text).not.toMatch(/<td>never<\/td>/);
    // Without user verification the assertion is refused.
    expect((await passkeySignIn(new Browser(world.target.url), device, { userVerified: false })).status).toBe(400);
  });

  it("X-ID-PK-3 a passkey sign-in is two factors: no second step after it, even with TOTP on; the ID token says 2fa", async () => {
    const user = await createUser(world.target);
    const b = await signedIn(user);
    const device = authenticator();
    expect((await register(b, device)).answer.status).toBe(303);
    // TOTP on (X-ID-MFA-2), its code computed at the service's time.
    const security = await b.get("/account/security");
    const started = await b.post("/account/security", { csrf_token: formFields(security.text).csrfToken, action: "start" });
    const secret = /<code id="totp-secret">([^<]+)<\/code>/.exec(started.text)?.[1]?.replace(/\s/g, "") ?? "";
    const now = world.target.clock?.now().getTime() ?? Date.now();
    const code = new OTPAuth.TOTP({ secret: OTPAuth.Secret.fromBase32(secret), digits: 6, period: 30 }).generate({ timestamp: now });
    const confirmed = await b.post("/account/security", { csrf_token: formFields(started.text).csrfToken, action: "confirm", code });
    expect(confirmed.status).toBe(200);
    // A password now leads to the second step; the passkey does not.
    const password = new Browser(world.target.url);
    const afterPassword = await password.post("/oauth/authorize", loginForm(formFields((await start(password, world.app)).text), user));
    expect(afterPassword.location).toMatch(/^\/signin\/second-factor/);
    const c = new Browser(world.target.url);
    const done = await passkeySignIn(c, device);
    expect(done.status).toBe(303);
    const tokens = await exchangeCode(
      world.target.url,
      { code: redirectParams(done.location).get("code")!, verifier: pkce.verifier, state: "s", location: done.location!, browser: c },
      world.app,
    );
    expect(tokens.status).toBe(200);
    const claims = decodeJwt(tokens.json.id_token).payload;
    expect(claims.amr).toEqual(["hwk", "mfa"]);
    expect(claims.acr).toBe("urn:identity:loa:2fa");
  });

  it("X-ID-PK-4 a signature counter that does not grow is refused (a cloned authenticator)", async () => {
    const user = await createUser(world.target);
    const device = authenticator();
    expect((await register(await signedIn(user), device)).answer.status).toBe(303);
    device.counter = 5;
    expect((await passkeySignIn(new Browser(world.target.url), device)).status).toBe(303);
    const clone = await passkeySignIn(new Browser(world.target.url), device);
    expect(clone.status).toBe(400);
    expect(clone.text).toContain("could not be verified");
    device.counter = 6;
    expect((await passkeySignIn(new Browser(world.target.url), device)).status).toBe(303);
  });

  it("X-ID-PK-5 refused passkey sign-ins count in the sign-in throttle: the account locks for that address (429)", async () => {
    const user = await createUser(world.target);
    const device = authenticator();
    expect((await register(await signedIn(user), device)).answer.status).toBe(303);
    const b = new Browser(world.target.url);
    for (let i = 0; i < 10; i++) expect((await passkeySignIn(b, device, { badSignature: true })).status).toBe(400);
    const locked = await passkeySignIn(b, device);
    expect(locked.status).toBe(429);
    expect(Number(locked.headers.get("retry-after"))).toBeGreaterThan(0);
  });

  it("X-ID-PK-6 the user lists, renames and removes passkeys; removal needs the password; another user's passkey is 404", async () => {
    const user = await createUser(world.target);
    const b = await signedIn(user);
    expect((await register(b, authenticator(), "Phone")).answer.status).toBe(303);
    const page = await b.get("/account/passkeys");
    expect(page.text).toMatch(/<td>Phone<\/td><td>\d{4}-\d{2}-\d{2}<\/td><td>never<\/td>/);
    const [id] = passkeyIds(page.text);
    const { csrfToken } = formFields(page.text);
    expect((await b.post(`/account/passkeys/${id}/rename`, { csrf_token: csrfToken, name: "Old phone" })).status).toBe(303);
    expect((await b.get("/account/passkeys")).text).toContain("Old phone");
    expect((await b.post(`/account/passkeys/${id}/rename`, { csrf_token: csrfToken, name: "" })).status).toBe(400);
    // Without the page's CSRF token nothing is renamed or removed: the 403 page.
    expect((await b.post(`/account/passkeys/${id}/rename`, { csrf_token: "forged", name: "Evil" })).status).toBe(403);
    expect((await b.post(`/account/passkeys/${id}/remove`, { csrf_token: "forged", password: user.password })).status).toBe(403);
    // Someone else's session cannot touch it.
    const stranger = await signedIn(await createUser(world.target));
    const theirCsrf = formFields((await stranger.get("/account/passkeys")).text).csrfToken;
    expect((await stranger.post(`/account/passkeys/${id}/rename`, { csrf_token: theirCsrf, name: "Mine" })).status).toBe(404);
    expect((await stranger.post(`/account/passkeys/${id}/remove`, { csrf_token: theirCsrf, password: "x" })).status).toBe(400);
    // Removal: the wrong password re-renders the page, the right one removes it.
    const wrong = await b.post(`/account/passkeys/${id}/remove`, { csrf_token: csrfToken, password: "not the password" });
    expect(wrong.status).toBe(400);
    expect(wrong.text).toContain("The password is wrong.");
    expect((await b.post(`/account/passkeys/${id}/remove`, { csrf_token: csrfToken, password: user.password })).status).toBe(303);
    expect(passkeyIds((await b.get("/account/passkeys")).text)).toEqual([]);
    expect((await b.post(`/account/passkeys/${id}/remove`, { csrf_token: csrfToken, password: user.password })).status).toBe(404);
  });

  it("X-ID-PK-6 removing a passkey is throttled as a password sign-in (429 once locked)", async () => {
    const user = await createUser(world.target);
    const b = await signedIn(user);
    expect((await register(b, authenticator())).answer.status).toBe(303);
    const page = await b.get("/account/passkeys");
    const [id] = passkeyIds(page.text);
    const { csrfToken } = formFields(page.text);
    for (let i = 0; i < 10; i++)
      expect((await b.post(`/account/passkeys/${id}/remove`, { csrf_token: csrfToken, password: "nope" })).status).toBe(400);
    const locked = await b.post(`/account/passkeys/${id}/remove`, { csrf_token: csrfToken, password: user.password });
    expect(locked.status).toBe(429);
  });

  it("X-ID-PK-7 the passkey pages load exactly one same-origin script, and the forms are hidden until it finds WebAuthn", async () => {
    const b = new Browser(world.target.url);
    const login = await start(b, world.app);
    const csp = login.headers.get("content-security-policy") ?? "";
    expect(csp).toContain(`script-src ${world.target.url}/assets/passkeys.js;`);
    expect(csp).toContain("connect-src 'self'");
    expect(csp).not.toContain("unsafe-eval");
    expect(login.text.match(/<script[^>]*>/g)).toEqual(['<script type="module" src="/assets/passkeys.js">']);
    expect(login.text).toMatch(/<form method="post" action="\/oauth\/authorize\/passkey"[^>]* hidden>/);
    const script = await b.get("/assets/passkeys.js");
    expect(script.status).toBe(200);
    expect(script.headers.get("content-type")).toMatch(/^text\/javascript/);
    expect(script.text).toContain("data-passkey");
    // Without a session the passkeys page says so.
    const anonymous = await b.get("/account/passkeys");
    expect(anonymous.status).toBe(401);
    expect(anonymous.text).toContain("You are not signed in");
    const page = await (await signedIn(await createUser(world.target))).get("/account/passkeys");
    expect(page.text).toContain('id="passkey-unavailable"');
  });

  it("X-ID-PK-8 every passkey request needs the page's CSRF token (403), a session for registration, a live request for sign-in", async () => {
    const user = await createUser(world.target);
    const b = await signedIn(user);
    const { csrfToken } = formFields((await b.get("/account/passkeys")).text);
    const forged = await postJson(b, "/account/passkeys/options", { csrf_token: "forged" });
    expect(forged.status).toBe(403);
    expect(forged.json.code).toBe("forbidden");
    expect((await postJson(b, "/account/passkeys/options", { csrf_token: csrfToken, extra: 1 })).status).toBe(400);
    expect((await b.post("/account/passkeys", { csrf_token: "forged", credential: "{}" })).status).toBe(403);
    expect((await b.post("/account/passkeys", { csrf_token: csrfToken, credential: "{}" })).status).toBe(400);
    expect((await b.post("/account/passkeys", { csrf_token: csrfToken })).status).toBe(400);
    // No session: the options and the form are refused.
    const anonymous = new Browser(world.target.url);
    const f = formFields((await start(anonymous, world.app)).text);
    expect((await postJson(anonymous, "/account/passkeys/options", { csrf_token: f.csrfToken })).status).toBe(403);
    expect((await anonymous.post("/account/passkeys", { csrf_token: f.csrfToken, credential: "{}" })).status).toBe(403);
    // Sign-in: a forged token, an unknown request, a broken form.
    expect((await postJson(anonymous, "/oauth/authorize/passkey/options", { csrf_token: "forged", request_id: f.requestId })).status).toBe(
      403,
    );
    const unknown = await postJson(anonymous, "/oauth/authorize/passkey/options", {
      csrf_token: f.csrfToken,
      request_id: "00000000-0000-4000-8000-000000000000",
    });
    expect(unknown.status).toBe(404);
    expect(
      (await anonymous.post("/oauth/authorize/passkey", { csrf_token: "forged", request_id: f.requestId, credential: "{}" })).status,
    ).toBe(403);
    const broken = await anonymous.post("/oauth/authorize/passkey", { csrf_token: f.csrfToken, request_id: f.requestId });
    expect(broken.status).toBe(400);
    expect(broken.text).toContain("Sign in");
    const notJson = await anonymous.post("/oauth/authorize/passkey", {
      csrf_token: f.csrfToken,
      request_id: f.requestId,
      credential: "not json",
    });
    expect(notJson.status).toBe(400);
  });
});
