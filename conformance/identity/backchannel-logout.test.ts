/**
 * OpenID Connect Back-Channel Logout 1.0 and `sid` in ID tokens: X-ID-LOGOUT-6..10. Relying parties
 * are local receivers on 127.0.0.1 (WEBHOOK_ALLOW_PRIVATE_TARGETS lets the SSRF guard reach them);
 * logout tokens are verified with `jose` against the service's published JWKS; retries are driven
 * by the service's clock (no waiting on the schedule).
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import * as oauth from "oauth4webapi";
import { createRemoteJWKSet, decodeJwt, decodeProtectedHeader, jwtVerify } from "jose";
import { fileWorld, identityWorld } from "../harness/worlds.ts";
import { expectStatus } from "../harness/api.ts";
import { request } from "../harness/http.ts";
import { identityOnDeployment, NEEDS, skipFileOnDeployment } from "../harness/skip.ts";
import { createUser } from "../harness/identity-fixtures.ts";
import { issueResetLink } from "../../handlers/identity/domain/accounts/password-reset.ts";
import { authorizeWithPassword, Browser, exchangeCode, formFields, tokenRequest } from "../harness/oauth-flow.ts";

skipFileOnDeployment(identityOnDeployment(), NEEDS.webhookReceivers);
const world = fileWorld(() => identityWorld({ admin: true, user: true, env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: "127.0.0.1" } }), {
  skippedFile: identityOnDeployment(),
});

const EVENT = "http://schemas.openid.net/event/backchannel-logout";

/** A relying party's back-channel logout endpoint: records each POST and answers `status(i)`. */
async function startRelyingParty(status: (index: number) => number = () => 200) {
  const received: { contentType: string | undefined; form: URLSearchParams }[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      received.push({ contentType: req.headers["content-type"], form: new URLSearchParams(Buffer.concat(chunks).toString("utf8")) });
      res.writeHead(status(received.length - 1), { "cache-control": "no-store" });
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/backchannel-logout`;
  return { url, received, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}
type RelyingParty = Awaited<ReturnType<typeof startRelyingParty>>;
const parties: RelyingParty[] = [];
const relyingParty = async (status?: (index: number) => number) => {
  const rp = await startRelyingParty(status);
  parties.push(rp);
  return rp;
};
afterEach(async () => {
  for (const rp of parties.splice(0)) await rp.close();
});

/** Polls (real time) until `predicate` holds: deliveries go out once the session end commits. */
async function eventually(predicate: () => boolean, what: string, timeoutMs = 5000) {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
/** Real time for the dispatcher to act, for "nothing arrives" checks. */
const settle = (ms = 300) => new Promise((r) => setTimeout(r, ms));

/** An application (admin API) with the back-channel settings given. */
async function application(settings: { backchannelLogoutUri?: string | null; backchannelLogoutSessionRequired?: boolean } = {}) {
  const redirectUri = "https://notes.example/callback";
  const app = await expectStatus(
    world.api().POST("/api/applications", {
      body: {
        name: "Notes",
        clientType: "confidential",
        redirectUris: [redirectUri],
        allowedScopes: ["openid", "email", "offline_access"],
        ...settings,
      },
    }),
    201,
    "create application",
  );
  return { id: app.id, clientId: app.clientId, clientSecret: app.clientSecret!, redirectUri, created: app };
}
type App = Awaited<ReturnType<typeof application>>;

/** Signs `browser` in to `app` (single sign-on after the first) and exchanges the code: the token answer. */
async function signIn(
  browser: Browser,
  app: App,
  scope = "openid email",
  user: { email: string; password: string } = world.user!,
  nonce = "n-0S6_WzA2Mj",
) {
  const flow = await authorizeWithPassword(world.target.url, { ...app, email: user.email, password: user.password, scope, nonce, browser });
  const tokens = await exchangeCode(world.target.url, flow, app);
  expect(tokens.status).toBe(200);
  return tokens.json as { id_token: string; access_token: string; refresh_token?: string };
}

/** Verifies a logout token as a relying party does (§2.6): signature by the JWKS, typ, iss, aud, events, no nonce. */
async function verifiedLogoutToken(token: string, clientId: string) {
  const jwks = createRemoteJWKSet(new URL(`${world.target.url}/.well-known/jwks.json`));
  const { payload, protectedHeader } = await jwtVerify(token, jwks, { issuer: world.target.url, audience: clientId, typ: "logout+jwt" });
  expect(protectedHeader.typ).toBe("logout+jwt");
  expect(payload.events).toEqual({ [EVENT]: {} });
  expect(payload).not.toHaveProperty("nonce");
  expect(typeof payload.jti).toBe("string");
  expect(payload.exp! - payload.iat!).toBe(120);
  return payload;
}

/** RP-Initiated Logout with the ID token as hint: the session ends at once (X-ID-LOGOUT-4). */
async function rpLogout(browser: Browser, idToken: string) {
  const res = await browser.get(`/oauth/logout?${new URLSearchParams({ id_token_hint: idToken })}`);
  expect(res.status).toBe(200);
  expect(res.text).toContain("You are signed out");
}

describe("sid in ID tokens", () => {
  it("X-ID-LOGOUT-6 every ID token of a session carries the same sid, for every application and after a refresh; another session another", async () => {
    const notes = await application();
    const tasks = await application();
    const browser = new Browser(world.target.url);
    const first = await signIn(browser, notes, "openid email offline_access");
    const sid = decodeJwt(first.id_token).sid;
    expect(typeof sid).toBe("string");
    expect((sid as string).length).toBeGreaterThanOrEqual(32);
    // Single sign-on into another application: the same session, the same sid.
    expect(decodeJwt((await signIn(browser, tasks)).id_token).sid).toBe(sid);
    // A refresh keeps the grant's sid.
    const refreshed = await tokenRequest(
      world.target.url,
      { grant_type: "refresh_token", refresh_token: first.refresh_token! },
      { clientId: notes.clientId, secret: notes.clientSecret },
    );
    expect(refreshed.status).toBe(200);
    expect(decodeJwt((refreshed.json as { id_token: string }).id_token).sid).toBe(sid);
    // Discovery says ID tokens may carry it.
    const discovery = await request(world.target.url, "GET", "/.well-known/openid-configuration");
    expect(discovery.body.claims_supported).toContain("sid");
    // Another browser, another session.
    expect(decodeJwt((await signIn(new Browser(world.target.url), notes)).id_token).sid).not.toBe(sid);
  });
});

describe("Back-Channel Logout settings", () => {
  it("X-ID-LOGOUT-7 discovery (read with oauth4webapi) advertises back-channel logout with sid", async () => {
    const issuer = new URL(world.target.url);
    const res = await oauth.discoveryRequest(issuer, { algorithm: "oidc", [oauth.allowInsecureRequests]: true });
    const as = await oauth.processDiscoveryResponse(issuer, res);
    expect(as.backchannel_logout_supported).toBe(true);
    expect(as.backchannel_logout_session_supported).toBe(true);
  });

  it("X-ID-LOGOUT-7 the URI is absolute https or loopback http without a fragment; the settings are kept, changed and removed", async () => {
    for (const bad of ["http://notes.example/logout", "https://notes.example/logout#x", "/logout"]) {
      const res = await world.api().POST("/api/applications", {
        body: { name: "Bad", clientType: "confidential", redirectUris: ["https://notes.example/cb"], backchannelLogoutUri: bad },
      });
      expect(res.response.status, bad).toBe(400);
    }
    const plain = await application();
    expect(plain.created.backchannelLogoutUri).toBeNull();
    expect(plain.created.backchannelLogoutSessionRequired).toBe(false);
    const app = await application({ backchannelLogoutUri: "https://notes.example/logout", backchannelLogoutSessionRequired: true });
    expect(app.created.backchannelLogoutUri).toBe("https://notes.example/logout");
    expect(app.created.backchannelLogoutSessionRequired).toBe(true);
    const changed = await expectStatus(
      world.api().PATCH("/api/applications/{appId}", {
        params: { path: { appId: app.id } },
        body: { backchannelLogoutUri: null, backchannelLogoutSessionRequired: false },
      }),
      200,
      "update application",
    );
    expect(changed.backchannelLogoutUri).toBeNull();
    expect(changed.backchannelLogoutSessionRequired).toBe(false);
    const refused = await world.api().PATCH("/api/applications/{appId}", {
      params: { path: { appId: app.id } },
      body: { backchannelLogoutUri: "ftp://notes.example/logout" },
    });
    expect(refused.response.status).toBe(400);
  });
});

describe("Back-Channel Logout", () => {
  it("X-ID-LOGOUT-8 X-ID-LOGOUT-9 RP-Initiated Logout sends each signed-in application with a URI one logout token (verified with the JWKS)", async () => {
    const notesRp = await relyingParty();
    const tasksRp = await relyingParty();
    const unusedRp = await relyingParty();
    const notes = await application({ backchannelLogoutUri: notesRp.url });
    const tasks = await application({ backchannelLogoutUri: tasksRp.url, backchannelLogoutSessionRequired: true });
    await application({ backchannelLogoutUri: unusedRp.url });
    const browser = new Browser(world.target.url);
    const { id_token: idToken } = await signIn(browser, notes);
    await signIn(browser, tasks);
    const sid = decodeJwt(idToken).sid;

    await rpLogout(browser, idToken);
    await eventually(() => notesRp.received.length === 1 && tasksRp.received.length === 1, "both logout tokens");
    for (const [rp, app] of [
      [notesRp, notes],
      [tasksRp, tasks],
    ] as const) {
      const [post] = rp.received;
      expect(post!.contentType).toBe("application/x-www-form-urlencoded");
      const token = post!.form.get("logout_token")!;
      expect(decodeProtectedHeader(token).typ).toBe("logout+jwt");
      const claims = await verifiedLogoutToken(token, app.clientId);
      expect(claims.sub).toBe(decodeJwt(idToken).sub);
      // backchannelLogoutSessionRequired or not, the token names the session (X-ID-LOGOUT-7).
      expect(claims.sid).toBe(sid);
    }
    // An application the session never signed into hears nothing; a second logout sends nothing more.
    await rpLogout(browser, idToken);
    await settle();
    expect(unusedRp.received).toHaveLength(0);
    expect(notesRp.received).toHaveLength(1);
  });

  it("X-ID-LOGOUT-8 the hosted sign-out and the account page ending a session send the logout token; an application without the URI gets none", async () => {
    const rp = await relyingParty();
    const notes = await application({ backchannelLogoutUri: rp.url });
    const silent = await application();
    const browser = new Browser(world.target.url);
    const { id_token: idToken } = await signIn(browser, notes);
    await signIn(browser, silent);
    // POST /logout, the hosted page's form.
    const page = await browser.get("/logout");
    const out = await browser.post("/logout", { csrf_token: formFields(page.text).csrfToken });
    expect([200, 302, 303]).toContain(out.status);
    await eventually(() => rp.received.length === 1, "the logout token after /logout");
    expect((await verifiedLogoutToken(rp.received[0]!.form.get("logout_token")!, notes.clientId)).sid).toBe(decodeJwt(idToken).sid);

    // The account page ending this browser's session (X-ID-ACCT-4); a user of one session, so the page lists just it.
    const again = new Browser(world.target.url);
    const second = await signIn(again, notes, "openid email", await createUser(world.target));
    let account = await again.get("/account");
    while (account.status === 302 || account.status === 303) account = await again.get(account.location!);
    expect(account.status).toBe(200);
    const handle = /name="session" value="([^"]*)"/.exec(account.text)?.[1];
    expect(handle).toBeTruthy();
    const ended = await again.post("/account/sessions/end", { csrf_token: formFields(account.text).csrfToken, session: handle! });
    expect(ended.status).toBe(303);
    await eventually(() => rp.received.length === 2, "the logout token after the account page");
    expect((await verifiedLogoutToken(rp.received[1]!.form.get("logout_token")!, notes.clientId)).sid).toBe(decodeJwt(second.id_token).sid);
  });

  it("X-ID-LOGOUT-8 a password change on the account page ends the other sessions: their applications are told, this one's are not", async () => {
    const rp = await relyingParty();
    const notes = await application({ backchannelLogoutUri: rp.url });
    const user = await createUser(world.target);
    const laptop = new Browser(world.target.url);
    const phone = new Browser(world.target.url);
    const onPhone = await signIn(phone, notes, "openid email", user);
    const onLaptop = await signIn(laptop, notes, "openid email", user);
    let account = await laptop.get("/account");
    while (account.status === 302 || account.status === 303) account = await laptop.get(account.location!);
    const changed = await laptop.post("/account/password", {
      csrf_token: formFields(account.text).csrfToken,
      current_password: user.password,
      new_password: "a much longer passphrase",
    });
    expect(changed.status).toBe(303);
    await eventually(() => rp.received.length === 1, "the phone session's logout token");
    const claims = await verifiedLogoutToken(rp.received[0]!.form.get("logout_token")!, notes.clientId);
    expect(claims.sid).toBe(decodeJwt(onPhone.id_token).sid);
    expect(claims.sid).not.toBe(decodeJwt(onLaptop.id_token).sid);
    await settle();
    expect(rp.received).toHaveLength(1);
  });

  it("X-ID-LOGOUT-8 a password reset ends every session of the user: each session's applications get a logout token", async () => {
    const rp = await relyingParty();
    const notes = await application({ backchannelLogoutUri: rp.url });
    const user = await createUser(world.target);
    const sids = new Set<unknown>();
    for (const b of [new Browser(world.target.url), new Browser(world.target.url)])
      sids.add(decodeJwt((await signIn(b, notes, "openid email", user)).id_token).sid);
    // The link as the admin command issues it; the reset itself through the hosted page.
    const issued = await issueResetLink(world.target.service!.ctx, user.email);
    const token = new URL(issued!.link).searchParams.get("token")!;
    const b = new Browser(world.target.url);
    const page = await b.get(`/reset-password?token=${encodeURIComponent(token)}`);
    const done = await b.post("/reset-password", { csrf_token: formFields(page.text).csrfToken, token, password: "my brand new password" });
    expect(done.status).toBe(303);
    await eventually(() => rp.received.length === 2, "a logout token per session");
    const told = new Set<unknown>();
    for (const r of rp.received) told.add((await verifiedLogoutToken(r.form.get("logout_token")!, notes.clientId)).sid);
    expect(told).toEqual(sids);
  });

  it("X-ID-LOGOUT-8 an admin deleting a user ends the user's sessions: their applications get logout tokens", async () => {
    const rp = await relyingParty();
    const notes = await application({ backchannelLogoutUri: rp.url });
    const user = await createUser(world.target);
    const { id_token: idToken } = await signIn(new Browser(world.target.url), notes, "openid email", user);
    const userId = decodeJwt(idToken).sub!;
    const removed = await world.api().DELETE("/api/organizations/current/users/{userId}", { params: { path: { userId } } });
    expect(removed.response.status).toBe(204);
    await eventually(() => rp.received.length === 1, "the deleted user's logout token");
    const claims = await verifiedLogoutToken(rp.received[0]!.form.get("logout_token")!, notes.clientId);
    expect(claims.sub).toBe(userId);
    expect(claims.sid).toBe(decodeJwt(idToken).sid);
  });

  it("X-ID-LOGOUT-10 a relying party answering 500 gets the same token (same jti) again on the schedule; a 2xx ends it", async () => {
    const rp = await relyingParty((i) => (i === 0 ? 500 : 200));
    const notes = await application({ backchannelLogoutUri: rp.url });
    const browser = new Browser(world.target.url);
    const { id_token: idToken } = await signIn(browser, notes);
    await rpLogout(browser, idToken);
    await eventually(() => rp.received.length === 1, "the first attempt");
    await settle(100);
    // Before the first delay (10 s) nothing more goes out; after it, the retry.
    world.target.clock!.advance(9_000);
    await settle();
    expect(rp.received).toHaveLength(1);
    world.target.clock!.advance(1_500);
    await eventually(() => rp.received.length === 2, "the retry");
    const [first, second] = rp.received.map((r) => decodeJwt(r.form.get("logout_token")!));
    expect(second!.jti).toBe(first!.jti);
    await verifiedLogoutToken(rp.received[1]!.form.get("logout_token")!, notes.clientId);
    // Answered 200: nothing more, however long.
    world.target.clock!.advance(3 * 3600_000);
    await settle();
    expect(rp.received).toHaveLength(2);
  });
});
