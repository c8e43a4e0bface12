/**
 * The user's own account page (X-ID-ACCT-1..6), through the hosted pages as a browser uses them:
 * its sign-in through the built-in `identity-account` client, the applications the user granted,
 * their sessions, the password change and the account's deletion. In-process only: the password
 * change's `user.updated` is received by a webhook receiver on 127.0.0.1.
 */
import { afterAll, describe, expect, it } from "vitest";
import { identityOnDeployment, NEEDS, skipFileOnDeployment } from "../harness/skip.ts";
import { fileWorld } from "../harness/worlds.ts";
import { fetchFrom, freshLoopbackAddress } from "../harness/client-address.ts";
import { createApp, createUser, type TestApp } from "../harness/identity-fixtures.ts";
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
import { createWebhook, startReceiver, webhookWorld, type Receiver } from "./webhooks-fixtures.ts";

skipFileOnDeployment(identityOnDeployment(), NEEDS.webhookReceivers);
// LOGIN_MAX_FAILURES: the throttle's lock is reached in a few wrong passwords.
const world = fileWorld(() => webhookWorld({ LOGIN_MAX_FAILURES: "3" }), { skippedFile: identityOnDeployment() });
const receivers: Receiver[] = [];
afterAll(async () => {
  for (const r of receivers.splice(0)) await r.close();
});

const FIREFOX_LINUX = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0";
const SAFARI_IPHONE =
  "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1";

/** A browser with its own User-Agent, connecting from `address` (a loopback address of its own by default). */
function browserAs(userAgent: string, address = freshLoopbackAddress()) {
  const from = fetchFrom(address);
  const send = ((input: string | URL, init?: RequestInit) =>
    from(input, { ...init, headers: { ...(init?.headers as Record<string, string>), "user-agent": userAgent } })) as typeof fetch;
  return { browser: new Browser(world.target.url, send), address };
}

/** Signs `user` in to the account page as a person does: /account → the login page → back to /account. Returns the page. */
async function signInToAccount(b: Browser, user: { email: string; password: string }) {
  const start = await b.get("/account");
  expect(start.status).toBe(302);
  const login = await b.get(start.location!);
  expect(login.status).toBe(200);
  const done = await b.post("/oauth/authorize", loginForm(formFields(login.text), user));
  expect(done.status, done.text.slice(0, 300)).toBe(303);
  const back = await b.get(done.location!);
  expect(back.status).toBe(302);
  expect(back.location).toBe("/account");
  const page = await b.get("/account");
  expect(page.status).toBe(200);
  return page;
}

const csrfOf = (html: string) => formFields(html).csrfToken;
/** The `<li>` items of the page's list under the heading `heading`. */
function listItems(html: string, heading: string): string[] {
  const section = html.split(`<h2>${heading}</h2>`)[1]?.split("<h2>")[0] ?? "";
  return [...section.matchAll(/<li>([\s\S]*?)<\/li>/g)].map((m) => m[1]!);
}
const hiddenValue = (html: string, name: string) => new RegExp(`name="${name}" value="([^"]*)"`).exec(html)?.[1] ?? "";
const alertOf = (html: string) => /<p role="alert">([^<]*)<\/p>/.exec(html)?.[1];

/** A user signed in to `app` in `b` (single sign-on), with the tokens of the code exchange (a refresh token too). */
async function grantedTokens(b: Browser, app: TestApp, user: { email: string; password: string }) {
  const flow = await authorizeWithPassword(world.target.url, {
    clientId: app.clientId,
    redirectUri: app.redirectUri,
    email: user.email,
    password: user.password,
    scope: "openid email offline_access",
    browser: b,
  });
  const tokens = await exchangeCode(world.target.url, flow, {
    clientId: app.clientId,
    redirectUri: app.redirectUri,
    clientSecret: app.clientSecret!,
  });
  expect(tokens.status).toBe(200);
  return tokens.json as { access_token: string; refresh_token: string };
}

const refresh = (app: TestApp, refreshToken: string) =>
  tokenRequest(world.target.url, {
    grant_type: "refresh_token",
    refresh_token: refreshToken,
    client_id: app.clientId,
    client_secret: app.clientSecret!,
  });
const userinfo = (accessToken: string) =>
  fetch(`${world.target.url}/oauth/userinfo`, { headers: { authorization: `Bearer ${accessToken}` } });

describe("the account page and its sign-in", () => {
  it("X-ID-ACCT-1 without a session /account signs in through the identity-account client and comes back to the page", async () => {
    const user = await createUser(world.target, { firstName: "Ada", lastName: "Lovelace" });
    const { browser: b } = browserAs(FIREFOX_LINUX);
    const start = await b.get("/account");
    expect(start.status).toBe(302);
    const to = new URL(start.location!, world.target.url);
    expect(to.pathname).toBe("/oauth/authorize");
    expect(to.searchParams.get("client_id")).toBe("identity-account");
    expect(to.searchParams.get("redirect_uri")).toBe(`${world.target.url}/account`);
    expect(to.searchParams.get("code_challenge_method")).toBe("S256");
    const page = await signInToAccount(b, user);
    expect(page.text).toContain("Your account");
    expect(page.text).toContain(user.email);
    expect(page.text).toContain("Ada Lovelace");
    expect(page.text).toContain('href="/account/security"');
    expect(page.headers.get("x-frame-options")).toBe("DENY");
    expect(page.headers.get("cache-control")).toBe("no-store");
  });

  it("X-ID-ACCT-1 nothing in the query chooses where a redirect goes, and a cancelled sign-in is a page, not a loop", async () => {
    const b = new Browser(world.target.url);
    for (const query of ["?return_to=https%3A%2F%2Fevil.example%2F", "?redirect_uri=https%3A%2F%2Fevil.example%2F"]) {
      const res = await b.get(`/account${query}`);
      expect(res.status, query).toBe(302);
      const to = new URL(res.location!, world.target.url);
      expect(to.origin).toBe(new URL(world.target.url).origin);
      expect(to.searchParams.get("redirect_uri")).toBe(`${world.target.url}/account`);
    }
    const cancelled = await b.get("/account?error=access_denied&error_description=The+user+denied+access.");
    expect(cancelled.status).toBe(200);
    expect(cancelled.text).toContain("You are not signed in");
    expect(cancelled.text).not.toContain("denied access");
  });

  it("X-ID-ACCT-1 a query that breaks the contract is a 400 page leading to /account, signed in or not", async () => {
    const { browser: signedIn } = browserAs(FIREFOX_LINUX);
    await signInToAccount(signedIn, await createUser(world.target));
    for (const b of [new Browser(world.target.url), signedIn]) {
      for (const query of ["?notice=nonsense", `?state=${"0".repeat(513)}`]) {
        const res = await b.get(`/account${query}`);
        expect(res.status, query).toBe(400);
        expect(res.headers.get("content-type")).toMatch(/^text\/html/);
        expect(res.location).toBeUndefined();
        expect(res.text).toContain("This link is not valid");
        expect(res.text).toContain('href="/account"');
      }
    }
  });

  it("X-ID-ACCT-1 forms need the page's CSRF token and a session; a body that breaks the contract is the page again", async () => {
    const user = await createUser(world.target);
    const { browser: b } = browserAs(FIREFOX_LINUX);
    const page = await signInToAccount(b, user);
    const csrf = csrfOf(page.text);
    const forgedForms: Array<[string, Record<string, string>]> = [
      ["/account/sessions/end", { session: "0".repeat(32) }],
      ["/account/applications/revoke", { application_id: "00000000-0000-4000-8000-000000000000" }],
      ["/account/password", { current_password: user.password, new_password: "a longer passphrase" }],
      ["/account/delete", { password: user.password }],
    ];
    for (const [path, fields] of forgedForms) expect((await b.post(path, { csrf_token: "forged", ...fields })).status, path).toBe(403);
    expect((await b.get("/account")).status).toBe(200);
    const invalid = await b.post("/account/sessions/end", { csrf_token: csrf, session: "not a handle" });
    expect(invalid.status).toBe(400);
    expect(alertOf(invalid.text)).toBe("Choose a session from the list.");
    const unknownField = await b.post("/account/applications/revoke", { csrf_token: csrf, application_id: "x", extra: "1" });
    expect(unknownField.status).toBe(400);
    // Signed out (the CSRF cookie stays): the form does nothing and sends the browser to sign in.
    b.cookies.delete("identity_session");
    const noSession = await b.post("/account/password", {
      csrf_token: csrf,
      current_password: user.password,
      new_password: "x".repeat(12),
    });
    expect(noSession.status).toBe(303);
    expect(noSession.location).toBe("/account");
    expect((await tokenRequestLogin(user.email, user.password)).status).toBe(303);
  });
});

/** Whether a password signs in on the hosted login page of a fresh browser (303 when it does). */
async function tokenRequestLogin(email: string, password: string) {
  const b = new Browser(world.target.url);
  const start = await b.get("/account");
  const login = await b.get(start.location!);
  return b.post("/oauth/authorize", loginForm(formFields(login.text), { email, password }));
}

describe("applications", () => {
  it("X-ID-ACCT-2 the page lists what the user granted; removing access ends the grant's tokens at once and the consent", async () => {
    const app = await createApp(world.target, { name: "Notes for ACCT-2" });
    const user = await createUser(world.target);
    const { browser: b } = browserAs(FIREFOX_LINUX);
    const tokens = await grantedTokens(b, app, user);
    // Signed in through the application: the same session opens the account page (single sign-on).
    const page = await b.get("/account");
    expect(page.status).toBe(200);
    const [item] = listItems(page.text, "Applications").filter((i) => i.includes("Notes for ACCT-2"));
    expect(item).toBeDefined();
    expect(item).toContain("openid, email, offline_access");
    expect(item).toContain("Granted ");
    expect(page.text).not.toContain("Identity dashboard");
    expect(page.text).not.toContain("<strong>Your account</strong>");

    const revoked = await b.post("/account/applications/revoke", {
      csrf_token: csrfOf(page.text),
      application_id: hiddenValue(item!, "application_id"),
    });
    expect(revoked.status).toBe(303);
    expect(revoked.location).toBe("/account?notice=application-revoked");
    expect((await refresh(app, tokens.refresh_token)).json.error).toBe("invalid_grant");
    expect((await userinfo(tokens.access_token)).status).toBe(401);
    const after = await b.get(revoked.location!);
    expect(after.text).toContain("access was removed");
    expect(after.text).not.toContain("Notes for ACCT-2");
    // The consent is gone: the signed-in user is asked again rather than sent straight back with a code.
    const again = await b.get(
      authorizationPath({
        clientId: app.clientId,
        redirectUri: app.redirectUri,
        scope: "openid email",
        challenge: pkcePair().challenge,
        method: "S256",
      }),
    );
    expect(again.status).toBe(200);
    expect(again.text).toContain('name="action" value="consent"');
    // Again: nothing left, the same answer.
    const twice = await b.post("/account/applications/revoke", {
      csrf_token: csrfOf(page.text),
      application_id: hiddenValue(item!, "application_id"),
    });
    expect(twice.status).toBe(303);
  });

  it("X-ID-ACCT-2 another user's application id ends nothing of theirs", async () => {
    const app = await createApp(world.target);
    const owner = await createUser(world.target);
    const other = await createUser(world.target);
    const ownerTokens = await grantedTokens(new Browser(world.target.url), app, owner);
    const { browser: b } = browserAs(FIREFOX_LINUX);
    const page = await signInToAccount(b, other);
    const res = await b.post("/account/applications/revoke", { csrf_token: csrfOf(page.text), application_id: app.id });
    expect(res.status).toBe(303);
    expect((await refresh(app, ownerTokens.refresh_token)).status).toBe(200);
  });
});

describe("sessions", () => {
  it("X-ID-ACCT-3 each session shows its device, address, sign-in and last use; the current one is marked", async () => {
    const user = await createUser(world.target);
    const laptop = browserAs(FIREFOX_LINUX);
    const phone = browserAs(SAFARI_IPHONE);
    await signInToAccount(phone.browser, user);
    const page = await signInToAccount(laptop.browser, user);
    const items = listItems(page.text, "Sessions");
    expect(items).toHaveLength(2);
    expect(items[0]).toContain("Firefox on Linux");
    expect(items[0]).toContain("(this browser)");
    expect(items[0]).toContain(`Address ${laptop.address}.`);
    expect(items[1]).toContain("Safari on iPhone");
    expect(items[1]).not.toContain("(this browser)");
    expect(items[1]).toContain(`Address ${phone.address}.`);
    for (const item of items)
      expect(item).toMatch(/Signed in \d{1,2} \w{3} \d{4}, \d{2}:\d{2} UTC\. Last used \d{1,2} \w{3} \d{4}, \d{2}:\d{2} UTC\./);
  });
});

describe("ending sessions", () => {
  it("X-ID-ACCT-4 ending another session stops its cookie at once; ending this one signs this browser out", async () => {
    const user = await createUser(world.target);
    const laptop = browserAs(FIREFOX_LINUX).browser;
    const phone = browserAs(SAFARI_IPHONE).browser;
    await signInToAccount(phone, user);
    const page = await signInToAccount(laptop, user);
    const [current, other] = listItems(page.text, "Sessions");
    const ended = await laptop.post("/account/sessions/end", { csrf_token: csrfOf(page.text), session: hiddenValue(other!, "session") });
    expect(ended.status).toBe(303);
    expect(ended.location).toBe("/account?notice=session-ended");
    expect((await phone.get("/account")).status).toBe(302);
    const after = await laptop.get("/account");
    expect(listItems(after.text, "Sessions")).toHaveLength(1);

    const self = await laptop.post("/account/sessions/end", { csrf_token: csrfOf(page.text), session: hiddenValue(current!, "session") });
    expect(self.status).toBe(303);
    expect(self.location).toBe("/account?notice=signed-out");
    expect(self.headers.getSetCookie().some((c) => c.startsWith("identity_session=;"))).toBe(true);
    const signedOut = await laptop.get(self.location!);
    expect(signedOut.status).toBe(200);
    expect(signedOut.text).toContain("You signed out of this browser.");
  });

  it("X-ID-ACCT-4 another user's session handle ends nothing", async () => {
    const alice = await createUser(world.target);
    const bob = await createUser(world.target);
    const aliceBrowser = browserAs(FIREFOX_LINUX).browser;
    const alicePage = await signInToAccount(aliceBrowser, alice);
    const aliceHandle = hiddenValue(listItems(alicePage.text, "Sessions")[0]!, "session");
    const bobBrowser = browserAs(FIREFOX_LINUX).browser;
    const bobPage = await signInToAccount(bobBrowser, bob);
    expect((await bobBrowser.post("/account/sessions/end", { csrf_token: csrfOf(bobPage.text), session: aliceHandle })).status).toBe(303);
    expect((await aliceBrowser.get("/account")).status).toBe(200);
  });
});

describe("password change", () => {
  it("X-ID-ACCT-5 the current password is required; the new one follows sign-up's rules", async () => {
    const user = await createUser(world.target);
    const { browser: b } = browserAs(FIREFOX_LINUX);
    const page = await signInToAccount(b, user);
    const wrong = await b.post("/account/password", {
      csrf_token: csrfOf(page.text),
      current_password: "not it",
      new_password: "a longer passphrase",
    });
    expect(wrong.status).toBe(400);
    expect(alertOf(wrong.text)).toBe("The password is wrong.");
    const short = await b.post("/account/password", {
      csrf_token: csrfOf(page.text),
      current_password: user.password,
      new_password: "short",
    });
    expect(short.status).toBe(400);
    expect(alertOf(short.text)).toContain("at least 8 characters");
    expect((await tokenRequestLogin(user.email, user.password)).status).toBe(303);
  });

  it("X-ID-ACCT-5 wrong current passwords count towards the sign-in limits (429 with Retry-After)", async () => {
    const user = await createUser(world.target);
    const { browser: b } = browserAs(FIREFOX_LINUX);
    const page = await signInToAccount(b, user);
    const guess = () =>
      b.post("/account/password", { csrf_token: csrfOf(page.text), current_password: "guess", new_password: "a longer passphrase" });
    for (let i = 0; i < 3; i++) expect((await guess()).status).toBe(400);
    const locked = await guess();
    expect(locked.status).toBe(429);
    expect(Number(locked.headers.get("retry-after"))).toBeGreaterThan(0);
    // Deleting the account is under the same limits.
    expect((await b.post("/account/delete", { csrf_token: csrfOf(page.text), password: "guess" })).status).toBe(429);
    // The right password is refused too while locked: nothing is checked.
    const right = await b.post("/account/password", {
      csrf_token: csrfOf(page.text),
      current_password: user.password,
      new_password: "a longer passphrase",
    });
    expect(right.status).toBe(429);
  });

  it("X-ID-ACCT-5 a change ends the other sessions and every application's tokens, keeps this browser signed in, and sends user.updated", async () => {
    const r = await startReceiver();
    receivers.push(r);
    const app = await createApp(world.target);
    // The webhook application the user is a user of (it receives user.updated).
    await createWebhook(world, world.app.id, { url: r.url, events: ["user.updated"] });
    const user = await createUser(world.target);
    await authorizeWithPassword(world.target.url, {
      clientId: world.app.clientId,
      redirectUri: "http://localhost:8080/callback",
      email: user.email,
      password: user.password,
      scope: "openid",
    });
    const phone = browserAs(SAFARI_IPHONE).browser;
    const tokens = await grantedTokens(phone, app, user);
    const laptop = browserAs(FIREFOX_LINUX).browser;
    const page = await signInToAccount(laptop, user);
    const oldCookie = laptop.cookies.get("identity_session");
    const newPassword = "a brand new passphrase";
    const changed = await laptop.post("/account/password", {
      csrf_token: csrfOf(page.text),
      current_password: user.password,
      new_password: newPassword,
    });
    expect(changed.status).toBe(303);
    expect(changed.location).toBe("/account?notice=password-changed");
    expect(laptop.cookies.get("identity_session")).toBeTruthy();
    expect(laptop.cookies.get("identity_session")).not.toBe(oldCookie);
    const after = await laptop.get(changed.location!);
    expect(after.status).toBe(200);
    expect(after.text).toContain("Your password was changed.");
    expect(listItems(after.text, "Sessions")).toHaveLength(1);
    expect((await phone.get("/account")).status).toBe(302);
    expect((await refresh(app, tokens.refresh_token)).json.error).toBe("invalid_grant");
    expect((await userinfo(tokens.access_token)).status).toBe(401);
    expect((await tokenRequestLogin(user.email, user.password)).status).toBe(400);
    expect((await tokenRequestLogin(user.email, newPassword)).status).toBe(303);
    await r.waitFor(1);
    expect(r.received[0]!.json).toMatchObject({
      event: "user.updated",
      data: { userId: user.id, email: user.email, changedFields: ["password"] },
    });
    expect(JSON.stringify(r.received[0]!.json)).not.toContain(newPassword);
  });

  it("X-ID-ACCT-5 of two concurrent changes one wins", async () => {
    const user = await createUser(world.target);
    const { browser: b } = browserAs(FIREFOX_LINUX);
    const page = await signInToAccount(b, user);
    const change = (to: string) =>
      b.post("/account/password", { csrf_token: csrfOf(page.text), current_password: user.password, new_password: to });
    const results = await Promise.all([change("first new passphrase"), change("second new passphrase")]);
    const statuses = results.map((x) => x.status).sort();
    expect(statuses).toEqual([303, 400]);
    const winner = results[0]!.status === 303 ? "first new passphrase" : "second new passphrase";
    expect((await tokenRequestLogin(user.email, winner)).status).toBe(303);
  });
});

describe("deleting the account", () => {
  it("X-ID-ACCT-6 the password confirms it; the account, its sessions and its tokens are gone", async () => {
    const app = await createApp(world.target);
    const user = await createUser(world.target);
    const { browser: b } = browserAs(FIREFOX_LINUX);
    const tokens = await grantedTokens(b, app, user);
    const page = await b.get("/account");
    expect(page.status).toBe(200);
    const wrong = await b.post("/account/delete", { csrf_token: csrfOf(page.text), password: "not it" });
    expect(wrong.status).toBe(400);
    expect(alertOf(wrong.text)).toBe("The password is wrong.");
    expect((await b.get("/account")).status).toBe(200);

    const deleted = await b.post("/account/delete", { csrf_token: csrfOf(page.text), password: user.password });
    expect(deleted.status).toBe(303);
    expect(deleted.location).toBe("/account?notice=account-deleted");
    expect(deleted.headers.getSetCookie().some((c) => c.startsWith("identity_session=;"))).toBe(true);
    const gone = await b.get(deleted.location!);
    expect(gone.status).toBe(200);
    expect(gone.text).toContain("Your account was deleted.");
    expect((await userinfo(tokens.access_token)).status).toBe(401);
    expect((await refresh(app, tokens.refresh_token)).json.error).toBe("invalid_grant");
    expect((await tokenRequestLogin(user.email, user.password)).status).toBe(400);
  });

  it("X-ID-ACCT-6 an account without a password confirms by typing its email address", async () => {
    const service = world.target.service!;
    const email = `social-${Date.now()}@example.com`;
    const row = await service.deps.accounts.registerUser({ email, firstName: "So", lastName: "Cial" });
    const started = await service.deps.oauth.sessions.start(row.id, undefined);
    const b = new Browser(world.target.url);
    b.cookies.set("identity_session", started.cookieValue);
    const page = await b.get("/account");
    expect(page.status).toBe(200);
    expect(page.text).toContain("has no password");
    expect(page.text).toContain('name="email"');
    const noPassword = await b.post("/account/password", {
      csrf_token: csrfOf(page.text),
      current_password: "x",
      new_password: "a longer passphrase",
    });
    expect(noPassword.status).toBe(400);
    const wrong = await b.post("/account/delete", { csrf_token: csrfOf(page.text), email: "someone@example.com" });
    expect(wrong.status).toBe(400);
    const deleted = await b.post("/account/delete", { csrf_token: csrfOf(page.text), email: email.toUpperCase() });
    expect(deleted.status).toBe(303);
    expect(await service.deps.accounts.findUserById(row.id)).toBeUndefined();
  });
});
