/**
 * X-ID-RST-1..7: password reset. The mail is read from the service's outbox (the local mailbox's
 * store), the clock is the test's, and clients are told apart by their loopback address: in-process
 * only.
 */
import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
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
  redirectParams,
  tokenRequest,
} from "../harness/oauth-flow.ts";
import { identityOnDeployment, NEEDS, skipFileOnDeployment } from "../harness/skip.ts";
import { uniqueEmail } from "../harness/targets.ts";
import { createWebhook, type Receiver, startReceiver, waitUntil, type WebhookWorld, webhookWorld } from "./webhooks-fixtures.ts";
import { issueResetLink } from "../../handlers/identity/domain/accounts/password-reset.ts";

skipFileOnDeployment(identityOnDeployment(), NEEDS.configuration);

let world: WebhookWorld;
let app: TestApp;
let receiver: Receiver;
beforeAll(async () => {
  if (identityOnDeployment()) return;
  world = await webhookWorld();
  app = await createApp(world.target, { branding: { primaryColor: "#aa3300" }, organizationId: world.organizationId });
  receiver = await startReceiver();
  await createWebhook(world, app.id, { url: receiver.url, events: ["user.updated"] });
});
afterAll(async () => {
  await receiver?.close();
  await world?.close();
});

const service = () => world.target.service!;
const clock = () => world.target.clock!;

/**
 * The password-reset messages queued to `to` (for an account with a password or a social-only one),
 * oldest first, once the dispatcher has sent what is due. Other mail (the sign-up's verification link)
 * is not this area's.
 */
async function mailTo(to: string) {
  await service().deps.mail.dispatchDue();
  return service()
    .db("mail_outbox")
    .where({ recipient: to.toLowerCase() })
    .whereIn("template", ["password-reset", "password-reset-social"])
    .orderBy("created_at");
}

/** The token of the newest reset link mailed to `to`. */
async function linkTokenOf(to: string): Promise<string> {
  const mail = (await mailTo(to)).filter((m) => m.template === "password-reset").at(-1);
  const token = /\/reset-password\?token=([A-Za-z0-9_%-]+)/.exec(mail?.text_body ?? "")?.[1];
  if (!token) throw new Error(`no reset link mailed to ${to}`);
  return decodeURIComponent(token);
}

/** A browser at the login page of `app`'s authorization request: the page and its fields. */
async function atLoginPage(b: Browser, state = "st-1") {
  const pkce = pkcePair();
  const login = await b.get(
    authorizationPath({
      clientId: app.clientId,
      redirectUri: app.redirectUri,
      scope: "openid email",
      state,
      challenge: pkce.challenge,
      method: "S256",
    }),
  );
  return { login, fields: formFields(login.text), pkce };
}

/** Asks for a reset link on the forgot-password page of `b`'s sign-in (request id), as a person does. */
async function askReset(b: Browser, email: string, requestId?: string) {
  clock().advance(1000); // each request at its own time: "the newest link" is well defined
  const page = await b.get(`/forgot-password${requestId ? `?request_id=${requestId}` : ""}`);
  return b.post("/forgot-password", {
    csrf_token: formFields(page.text).csrfToken,
    email,
    ...(requestId ? { request_id: requestId } : {}),
  });
}

/** Opens the link's page and posts a new password. */
async function setPassword(b: Browser, token: string, password: string) {
  const page = await b.get(`/reset-password?token=${encodeURIComponent(token)}`);
  // A spent link's page has no form: the browser's CSRF token from another hosted page posts anyway.
  const csrf = formFields(page.text).csrfToken || formFields((await b.get("/forgot-password")).text).csrfToken;
  return b.post("/reset-password", { csrf_token: csrf, token, password });
}

const resetRows = () => service().db("password_resets");

describe("password reset", () => {
  it("X-ID-RST-1 a page's query that breaks the contract is a 400 page that leads on; unknown parameters are ignored", async () => {
    const b = new Browser(world.url, fetchFrom(freshLoopbackAddress()));
    const tooLong = "0".repeat(65);
    for (const [path, href] of [
      [`/forgot-password?request_id=${tooLong}`, "/forgot-password"],
      [`/forgot-password/sent?request_id=${tooLong}`, "/forgot-password"],
      [`/reset-password/done?reset=${tooLong}`, "/account"],
    ] as const) {
      const res = await b.get(path);
      expect(res.status, path).toBe(400);
      expect(res.text, path).toContain("This link is not valid");
      expect(res.text, path).toContain(`href="${href}"`);
    }
    for (const path of ["/forgot-password?utm_source=x", "/forgot-password/sent?utm_source=x"]) {
      const res = await b.get(path);
      expect(res.status, path).toBe(200);
      expect(res.text, path).not.toContain("This link is not valid");
    }
  });

  it("X-ID-RST-1 the login page links to the branded forgot-password page; a registered and an unknown address get the same redirect and page after the same write, and only the account gets mail", async () => {
    const user = await createUser(world.target);
    const unknown = uniqueEmail("nobody");
    const b = new Browser(world.url, fetchFrom(freshLoopbackAddress()));
    const { login, fields } = await atLoginPage(b);
    expect(login.text).toContain(`href="/forgot-password?request_id=${fields.requestId}"`);
    const forgot = await b.get(`/forgot-password?request_id=${fields.requestId}`);
    expect(forgot.status).toBe(200);
    expect(forgot.text).toContain(app.name);
    expect(forgot.text).toContain("#aa3300");

    const before = Number((await resetRows().count({ n: "*" }))[0]!.n);
    const known = await askReset(b, user.email, fields.requestId);
    const stranger = await askReset(b, unknown, fields.requestId);
    expect(known.status).toBe(303);
    expect(stranger.status).toBe(303);
    expect(stranger.location).toBe(known.location);
    expect(known.location).toBe(`/forgot-password/sent?request_id=${fields.requestId}`);
    expect(Number((await resetRows().count({ n: "*" }))[0]!.n)).toBe(before + 2);

    const sent = await b.get(known.location!);
    expect(sent.status).toBe(200);
    expect(sent.text).toContain("Check your email");
    expect(sent.text).not.toContain(user.email);
    expect(await mailTo(unknown)).toHaveLength(0);
    const mails = await mailTo(user.email);
    expect(mails).toHaveLength(1);
    expect(mails[0]!.subject).toContain(app.name);

    // A malformed address is the form again (it depends only on what was typed), a forged form the 403 page.
    const page = await b.get("/forgot-password");
    const bad = await b.post("/forgot-password", { csrf_token: formFields(page.text).csrfToken, email: "not-an-address" });
    expect(bad.status).toBe(400);
    expect(bad.text).toContain("Enter a valid email address.");
    expect((await b.post("/forgot-password", { csrf_token: "forged", email: user.email })).status).toBe(403);
  });

  it("X-ID-RST-2 a social-only account is mailed a notice without a link; its link row spends nothing", async () => {
    const email = uniqueEmail("social");
    await service().deps.accounts.findOrCreateSocialUser({
      provider: "upstream",
      subject: `sub-${email}`,
      email,
      emailVerified: true,
      firstName: "So",
      lastName: "Cial",
    });
    const b = new Browser(world.url, fetchFrom(freshLoopbackAddress()));
    expect((await askReset(b, email)).status).toBe(303);
    const mails = await mailTo(email);
    expect(mails.map((m) => m.template)).toEqual(["password-reset-social"]);
    expect(mails[0]!.text_body).not.toContain("/reset-password");
  });

  it("X-ID-RST-3 the link is 256 random bits stored as its SHA-256, is not spent by opening it, works for 15 minutes, only the newest works, and two concurrent submissions succeed once", async () => {
    const user = await createUser(world.target);
    const b = new Browser(world.url, fetchFrom(freshLoopbackAddress()));
    await askReset(b, user.email);
    const first = await linkTokenOf(user.email);
    expect(Buffer.from(first, "base64url")).toHaveLength(32);
    const row = await resetRows()
      .where({ token_hash: createHash("sha256").update(first).digest("hex") })
      .first();
    expect(row).toBeDefined();
    expect(JSON.stringify(await resetRows().where({ id: row.id }).first())).not.toContain(first);

    // Opening the page twice spends nothing.
    expect((await b.get(`/reset-password?token=${first}`)).status).toBe(200);
    expect((await b.get(`/reset-password?token=${first}`)).status).toBe(200);

    // A newer link ends the older one.
    await askReset(b, user.email);
    const second = await linkTokenOf(user.email);
    expect(second).not.toBe(first);
    const older = await b.get(`/reset-password?token=${first}`);
    expect(older.status).toBe(400);
    expect(older.text).toContain("expired or was used");

    // Two concurrent submissions: exactly one changes the password.
    const pageA = await b.get(`/reset-password?token=${second}`);
    const csrf = formFields(pageA.text).csrfToken;
    const answers = await Promise.all([
      b.post("/reset-password", { csrf_token: csrf, token: second, password: "first new password" }),
      b.post("/reset-password", { csrf_token: csrf, token: second, password: "second new password" }),
    ]);
    expect(answers.map((a) => a.status).sort()).toEqual([303, 400]);
    expect((await b.get(`/reset-password?token=${second}`)).status).toBe(400);

    // Expiry on the test clock: usable at 14:59, not at 15:01.
    await askReset(b, user.email);
    const third = await linkTokenOf(user.email);
    clock().advance(14 * 60_000 + 59_000);
    expect((await b.get(`/reset-password?token=${third}`)).status).toBe(200);
    clock().advance(2_000);
    expect((await b.get(`/reset-password?token=${third}`)).status).toBe(400);
    expect((await setPassword(b, third, "too late password")).status).toBe(400);
    expect((await b.get("/reset-password?token=never-issued")).status).toBe(400);
  });

  it("X-ID-RST-4 the new password follows sign-up's rule: a short one is the form again and leaves the link unspent; a forged form is the 403 page", async () => {
    const user = await createUser(world.target);
    const b = new Browser(world.url, fetchFrom(freshLoopbackAddress()));
    await askReset(b, user.email);
    const token = await linkTokenOf(user.email);
    const short = await setPassword(b, token, "short");
    expect(short.status).toBe(400);
    expect(short.text).toContain("at least 8 characters");
    expect(short.text).toContain('name="token"');
    const forged = await b.post("/reset-password", { csrf_token: "forged", token, password: "long enough password" });
    expect(forged.status).toBe(403);
    expect((await setPassword(b, token, "long enough password")).status).toBe(303);
  });

  it("X-ID-RST-5 a reset ends every session, refresh family and access token, delivers user.updated, forgets the account's failures, and sends the user back to the application's sign-in, which completes with the new password", async () => {
    const user = await createUser(world.target);
    const client = { clientId: app.clientId, redirectUri: app.redirectUri, clientSecret: app.clientSecret! };
    const flow = await authorizeWithPassword(world.url, {
      ...client,
      email: user.email,
      password: user.password,
      scope: "openid email offline_access",
    });
    const tokens = (await exchangeCode(world.url, flow, client)).json;
    expect(tokens.refresh_token).toBeDefined();
    const userinfo = () => fetch(`${world.url}/oauth/userinfo`, { headers: { authorization: `Bearer ${tokens.access_token}` } });
    expect((await userinfo()).status).toBe(200);
    const signedIn = flow.browser; // holds the session cookie

    // Failures from other addresses slow the account down (X-ID-AZ-4)… The first delay is a second
    // from the last failure: the clock stops here, so the slowed sign-in falls inside it however
    // slowly the machine runs (from now on the file's clock moves only by `advance`).
    clock().freeze();
    const { policy } = service().deps.oauth.throttle;
    const others = [];
    for (let i = 0; i < policy.backoffAfterFailures; i++) {
      const other = new Browser(world.url, fetchFrom(freshLoopbackAddress()));
      others.push({ other, fields: (await atLoginPage(other)).fields });
    }
    const slowed = new Browser(world.url, fetchFrom(freshLoopbackAddress()));
    const slowedPage = await atLoginPage(slowed);
    for (const { other, fields } of others)
      expect((await other.post("/oauth/authorize", loginForm(fields, { email: user.email, password: "wrong password" }))).status).toBe(400);
    expect((await slowed.post("/oauth/authorize", loginForm(slowedPage.fields, user))).status).toBe(429);

    // The reset, from the login page of a request with its own state.
    const b = new Browser(world.url, fetchFrom(freshLoopbackAddress()));
    const { fields, pkce } = await atLoginPage(b, "after-reset");
    await askReset(b, user.email, fields.requestId);
    const done = await setPassword(b, await linkTokenOf(user.email), "my brand new password");
    expect(done.status).toBe(303);
    expect(done.location).toMatch(/^\/reset-password\/done\?reset=/);

    // Sessions, refresh family and access token ended.
    const again = await signedIn.get(
      authorizationPath({
        clientId: app.clientId,
        redirectUri: app.redirectUri,
        scope: "openid",
        challenge: pkce.challenge,
        method: "S256",
      }),
    );
    expect(again.status).toBe(200);
    expect(again.text).toContain('value="login"');
    const refresh = await tokenRequest(world.url, {
      grant_type: "refresh_token",
      refresh_token: tokens.refresh_token,
      client_id: app.clientId,
      client_secret: app.clientSecret!,
    });
    expect(refresh.status).toBe(400);
    expect(refresh.json.error).toBe("invalid_grant");
    expect((await userinfo()).status).toBe(401);

    // user.updated, naming the password.
    await waitUntil(() => receiver.received.some((r) => r.json?.event === "user.updated" && r.json?.data?.userId === user.id));
    const event = receiver.received.find((r) => r.json?.data?.userId === user.id)!;
    expect(event.json.data.changedFields).toEqual(["password"]);

    // The account is no longer slowed down; the old password is refused, the new one completes the
    // application's own authorization request (its state and PKCE challenge).
    const page = await b.get(done.location!);
    expect(page.text).toContain(`Sign in to ${app.name}`);
    const signInHref = /<a class="button" href="([^"]+)"/.exec(page.text)![1]!.replaceAll("&amp;", "&");
    const login = await b.get(signInHref);
    const f = formFields(login.text);
    expect((await b.post("/oauth/authorize", loginForm(f, user))).status).toBe(400);
    const login2 = await b.get(signInHref);
    const ok = await b.post(
      "/oauth/authorize",
      loginForm(formFields(login2.text), { email: user.email, password: "my brand new password" }),
    );
    expect(ok.status).toBe(303);
    const params = redirectParams(ok.location);
    expect(params.get("state")).toBe("after-reset");
    const exchanged = await exchangeCode(
      world.url,
      { code: params.get("code")!, verifier: pkce.verifier, state: null, location: "", browser: b },
      client,
    );
    expect(exchanged.status).toBe(200);
  });

  it("X-ID-RST-6 at most 5 requests per address per hour and 20 per client address: over a limit the answer is the same and nothing is written or sent", async () => {
    const user = await createUser(world.target);
    const b = new Browser(world.url, fetchFrom(freshLoopbackAddress()));
    for (let i = 0; i < 5; i++) expect((await askReset(b, user.email)).status).toBe(303);
    expect(await mailTo(user.email)).toHaveLength(5);
    const rows = Number((await resetRows().count({ n: "*" }))[0]!.n);
    const limited = await askReset(b, user.email);
    expect(limited.status).toBe(303);
    expect(limited.location).toBe("/forgot-password/sent");
    expect(Number((await resetRows().count({ n: "*" }))[0]!.n)).toBe(rows);
    expect(await mailTo(user.email)).toHaveLength(5);
    clock().advance(3600_000 + 1000);
    await askReset(b, user.email);
    expect(await mailTo(user.email)).toHaveLength(6);

    // One client address, many addresses: the 21st request is answered alike and sends nothing.
    const other = await createUser(world.target);
    const prober = new Browser(world.url, fetchFrom(freshLoopbackAddress()));
    for (let i = 0; i < 20; i++) expect((await askReset(prober, uniqueEmail("probe"))).status).toBe(303);
    expect((await askReset(prober, other.email)).location).toBe("/forgot-password/sent");
    expect(await mailTo(other.email)).toHaveLength(0);
    // Another client address has its own budget.
    await askReset(new Browser(world.url, fetchFrom(freshLoopbackAddress())), other.email);
    expect(await mailTo(other.email)).toHaveLength(1);
  });

  it("X-ID-RST-7 an administrator's link (the admin command's) works once and ends earlier links; a forced reset ends the password and mails a link", async () => {
    const user = await createUser(world.target);
    const b = new Browser(world.url, fetchFrom(freshLoopbackAddress()));
    await askReset(b, user.email);
    const mailed = await linkTokenOf(user.email);
    const { ctx } = service();
    const issued = await issueResetLink({ storage: ctx.storage, clock: ctx.clock, issuer: ctx.issuer }, user.email);
    expect(issued!.link.startsWith(`${world.url}/reset-password?token=`)).toBe(true);
    expect(await issueResetLink({ storage: ctx.storage, clock: ctx.clock, issuer: ctx.issuer }, uniqueEmail("none"))).toBeUndefined();
    expect((await b.get(`/reset-password?token=${mailed}`)).status).toBe(400);
    const token = decodeURIComponent(new URL(issued!.link).searchParams.get("token")!);
    expect((await setPassword(b, token, "set by admin link")).status).toBe(303);
    expect((await setPassword(b, token, "set by admin link")).status).toBe(400);

    const forced = await createUser(world.target);
    expect(await service().deps.accounts.forcePasswordReset(forced.id)).toBe(true);
    expect(await service().deps.accounts.forcePasswordReset("00000000-0000-4000-8000-000000000000")).toBe(false);
    const found = await service().deps.accounts.findUserByEmail(forced.email);
    expect(await service().deps.accounts.verifyPassword(found, forced.password)).toBe(false);
    expect((await setPassword(b, await linkTokenOf(forced.email), "chosen after force")).status).toBe(303);
    const after = await service().deps.accounts.findUserByEmail(forced.email);
    expect(await service().deps.accounts.verifyPassword(after, "chosen after force")).toBe(true);
  });
});
