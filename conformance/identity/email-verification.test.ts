/**
 * X-ID-EVF-1..7: email verification. The mailed link is read from identity's outbox through the
 * in-process service (what the local mailbox shows); everything it does is checked over HTTP: the
 * hosted pages, the users API, ID tokens and UserInfo, webhook deliveries. The clock moves expiry
 * and the resend limits: in-process only.
 */
import { createHash, randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { identityApi } from "../harness/api.ts";
import { decodeJwt, request } from "../harness/http.ts";
import { createApp, registerUser, type TestApp } from "../harness/identity-fixtures.ts";
import {
  authorizationPath,
  Browser,
  codeExchangeForm,
  formFields,
  loginForm,
  pkcePair,
  redirectParams,
  tokenRequest,
} from "../harness/oauth-flow.ts";
import { identityOnDeployment, NEEDS, skipFileOnDeployment } from "../harness/skip.ts";
import { identityTarget, type IdentityTarget, uniqueEmail } from "../harness/targets.ts";
import { createWebhook, startReceiver, WEBHOOK_TEST_ENV, waitUntil } from "./webhooks-fixtures.ts";

skipFileOnDeployment(identityOnDeployment(), NEEDS.clock);

let t: IdentityTarget;
let app: TestApp;
let strictApp: TestApp;
let adminApi: ReturnType<typeof identityApi>;
let adminUserId: string;
/** The admin's dashboard token, minted now (tests move the clock past any one token's hour). */
const freshAdminToken = async () =>
  (await t.service!.ctx.accessTokens.issue({ userId: adminUserId, clientId: "identity-dashboard", scopes: ["openid"] })).token;

beforeAll(async () => {
  if (identityOnDeployment()) return;
  t = await identityTarget({ env: WEBHOOK_TEST_ENV });
  const org = await t.createOrganization!();
  const { token } = await t.service!.ctx.accessTokens.issue({
    userId: org.admin.userId,
    clientId: "identity-dashboard",
    scopes: ["openid"],
  });
  adminUserId = org.admin.userId;
  adminApi = identityApi(t, { token });
  app = await createApp(t, { organizationId: org.organizationId });
  strictApp = await createApp(t, { organizationId: org.organizationId, name: "Strict Notes" });
  // X-ID-EVF-5 is set through the admin API, as the dashboard sets it.
  const set = await adminApi.PATCH("/api/applications/{appId}", {
    params: { path: { appId: strictApp.id } },
    body: { requireVerifiedEmail: true },
  });
  expect(set.response.status).toBe(200);
  expect(set.data?.requireVerifiedEmail).toBe(true);
});
afterAll(async () => t?.close());

/** The newest verification link mailed to `email` (the local mailbox's view of the outbox). */
async function linkTo(email: string): Promise<string> {
  const messages = await t.service!.deps.mail.mailbox!.newest();
  const message = messages.find((m) => m.recipient === email.toLowerCase() && m.template === "email-verification");
  const link = /(http:\/\/\S+\/verify-email\/confirm\?token=[A-Za-z0-9_%-]+)/.exec(message?.text_body ?? "")?.[1];
  if (!link) throw new Error(`no verification link was mailed to ${email}`);
  return link;
}

const mailsTo = async (email: string) =>
  (await t.service!.deps.mail.mailbox!.newest()).filter((m) => m.recipient === email.toLowerCase() && m.template === "email-verification");

const open = (link: string) => request(t.url, "GET", new URL(link).pathname + new URL(link).search);

async function dashboardApi(userId: string) {
  const { token } = await t.service!.ctx.accessTokens.issue({
    userId,
    clientId: "identity-dashboard",
    scopes: ["openid", "profile", "email"],
  });
  return identityApi(t, { token });
}

/** Signs in to `client` in a fresh browser with a password: the answer to the login form, and what the flow needs after. */
async function signIn(client: TestApp, who: { email: string; password: string }, browser = new Browser(t.url)) {
  const { verifier, challenge } = pkcePair();
  const state = randomBytes(6).toString("hex");
  const path = authorizationPath({
    clientId: client.clientId,
    redirectUri: client.redirectUri,
    scope: "openid email",
    state,
    challenge,
    method: "S256",
  });
  const page = await browser.get(path);
  const answer = await browser.post("/oauth/authorize", loginForm(formFields(page.text), who));
  return { answer, browser, verifier, state };
}

describe("X-ID-EVF email verification", () => {
  it("X-ID-EVF-1 sign-up through the API and the hosted page mails a verification link to the new address; the account is unverified until it is used", async () => {
    const user = await registerUser(t, app.clientId);
    expect(user.emailVerified).toBe(false);
    expect(await linkTo(user.email)).toMatch(/\/verify-email\/confirm\?token=/);

    const browser = new Browser(t.url);
    const { challenge } = pkcePair();
    const login = await browser.get(
      authorizationPath({ clientId: app.clientId, redirectUri: app.redirectUri, scope: "openid", challenge, method: "S256" }),
    );
    const { csrfToken, requestId } = formFields(login.text);
    const email = uniqueEmail("hosted");
    const signup = await browser.post("/signup", {
      csrf_token: csrfToken,
      request_id: requestId,
      email,
      password: "correct horse battery staple",
      first_name: "Ada",
      last_name: "Lovelace",
    });
    expect(signup.status).toBe(303);
    expect(redirectParams(signup.location).get("code")).toBeTruthy();
    expect(await mailsTo(email)).toHaveLength(1);
  });

  it("X-ID-EVF-2 a link works once, is stored only as its hash, and expires after 24 hours", async () => {
    const user = await registerUser(t, app.clientId);
    const link = await linkTo(user.email);
    expect((await mailsTo(user.email))[0]?.text_body).toContain("open this link within 24 hours.");
    const token = new URL(link).searchParams.get("token")!;
    const rows = await t.service!.db("email_verifications").where({ user_id: user.id });
    expect(rows).toHaveLength(1);
    expect(rows[0].token_hash).toBe(createHash("sha256").update(token).digest("hex"));
    expect(JSON.stringify(rows)).not.toContain(token);

    // Two uses at once: one verifies, the other finds the link used.
    const [a, b] = await Promise.all([open(link), open(link)]);
    expect([a.status, b.status].sort()).toEqual([200, 400]);
    expect((await open(link)).status).toBe(400);
    expect((await request(t.url, "GET", "/verify-email/confirm?token=nothing-like-a-real-token")).status).toBe(400);
    expect((await request(t.url, "GET", `/verify-email/confirm?token=${"x".repeat(200)}`)).status).toBe(400);

    const late = await registerUser(t, app.clientId);
    const lateLink = await linkTo(late.email);
    t.clock!.advance(24 * 3600 * 1000 + 1000);
    const expired = await open(lateLink);
    expect(expired.status).toBe(400);
    expect(expired.text).toContain("unknown, used or expired");
    const me = await (await dashboardApi(late.id)).GET("/api/users/me");
    expect(me.data?.emailVerified).toBe(false);
  });

  it("X-ID-EVF-3 an email change waits for the new address's link: pendingEmail until then, a newer change supersedes, a taken address is 409", async () => {
    const user = await registerUser(t, app.clientId);
    const other = await registerUser(t, app.clientId);
    const api = await dashboardApi(user.id);
    const taken = await api.PATCH("/api/users/me", { body: { email: other.email } });
    expect(taken.response.status).toBe(409);
    expect(taken.error).toMatchObject({ code: "email_taken" });

    const first = uniqueEmail("first-change");
    const asked = await api.PATCH("/api/users/me", { body: { email: first } });
    expect(asked.response.status).toBe(200);
    expect(asked.data).toMatchObject({ email: user.email, pendingEmail: first });
    const firstLink = await linkTo(first);
    // X-ID-EVF-6 holds for a change too: the same address again within a minute is 429.
    const repeated = await api.PATCH("/api/users/me", { body: { email: first } });
    expect(repeated.response.status).toBe(429);
    expect(repeated.response.headers.get("retry-after")).toBeTruthy();
    t.clock!.advance(61_000);
    const second = uniqueEmail("second-change");
    expect((await api.PATCH("/api/users/me", { body: { email: second } })).data?.pendingEmail).toBe(second);
    expect((await open(firstLink)).status).toBe(400);
    expect((await api.GET("/api/users/me")).data).toMatchObject({ email: user.email, pendingEmail: second });

    const secondLink = await linkTo(second);
    const done = await open(secondLink);
    expect(done.status).toBe(200);
    const after = await api.GET("/api/users/me");
    expect(after.data).toMatchObject({ email: second, emailVerified: true });
    expect(after.data?.pendingEmail).toBeUndefined();

    // An address another account took between the change and its link: 409 page, nothing changes.
    const third = uniqueEmail("raced");
    t.clock!.advance(61_000);
    expect((await api.PATCH("/api/users/me", { body: { email: third } })).response.status).toBe(200);
    const racedLink = await linkTo(third);
    await registerUser(t, app.clientId, { email: third });
    const raced = await open(racedLink);
    expect(raced.status).toBe(409);
    expect((await api.GET("/api/users/me")).data).toMatchObject({ email: second, emailVerified: true });
  });

  it("X-ID-EVF-4 email_verified in the ID token and UserInfo is false before the link is used and true after", async () => {
    const user = await registerUser(t, app.clientId);
    const claimsNow = async () => {
      const { answer, verifier } = await signIn(app, user);
      const code = redirectParams(answer.location).get("code")!;
      const tokens = await tokenRequest(t.url, codeExchangeForm({ code, verifier }, app));
      const info = await request(t.url, "GET", "/oauth/userinfo", { headers: { authorization: `Bearer ${tokens.json.access_token}` } });
      return { idToken: decodeJwt(tokens.json.id_token).payload, userinfo: info.body };
    };
    const before = await claimsNow();
    expect(before.idToken.email_verified).toBe(false);
    expect(before.userinfo.email_verified).toBe(false);
    expect((await open(await linkTo(user.email))).status).toBe(200);
    const after = await claimsNow();
    expect(after.idToken).toMatchObject({ email: user.email, email_verified: true });
    expect(after.userinfo).toMatchObject({ email: user.email, email_verified: true });
  });

  it("X-ID-EVF-5 an application that requires a verified email stops sign-in on /verify-email, then continues the same authorization", async () => {
    const user = await registerUser(t, app.clientId);
    const { answer, browser, state } = await signIn(strictApp, user);
    expect(answer.status).toBe(303);
    expect(answer.location).toMatch(/^\/verify-email\?request_id=[0-9a-f-]{36}$/);
    const stop = await browser.get(answer.location!);
    expect(stop.status).toBe(200);
    expect(stop.text).toContain("Strict Notes needs a verified email address");
    expect(stop.text).toContain(user.email);
    const continueHref = /<a href="([^"]+)">I have verified it: continue<\/a>/.exec(stop.text)![1]!.replaceAll("&amp;", "&");

    // Not verified yet: continuing stops again; prompt=none is interaction_required.
    const again = await browser.get(continueHref);
    expect(again.status).toBe(302);
    expect(again.location).toMatch(/^\/verify-email\?/);
    const silent = await browser.get(`${continueHref}&prompt=none`);
    expect(redirectParams(silent.location).get("error")).toBe("interaction_required");
    // The page belongs to the signed-in browser: without its session it is the 400 page.
    expect((await request(t.url, "GET", answer.location!)).status).toBe(400);
    expect((await request(t.url, "GET", "/verify-email?request_id=not-a-uuid")).status).toBe(400);

    // The mail sent again from the page carries the authorization: its page continues it.
    t.clock!.advance(61_000);
    const fields = formFields(stop.text);
    expect((await browser.post("/verify-email", { csrf_token: fields.csrfToken, request_id: fields.requestId })).status).toBe(303);
    const verified = await open(await linkTo(user.email));
    expect(verified.status).toBe(200);
    const verifiedHref = /<a href="([^"]+)">Continue to Strict Notes<\/a>/.exec(verified.text)?.[1]?.replaceAll("&amp;", "&");
    expect(verifiedHref).toBe(continueHref);
    const resumed = await browser.get(continueHref);
    expect(resumed.status).toBe(302);
    const params = redirectParams(resumed.location);
    expect(params.get("code")).toBeTruthy();
    expect(params.get("state")).toBe(state);
  });

  it("X-ID-EVF-6 verification mail is limited per account and address: one a minute, five an hour; a verified address is 409", async () => {
    const user = await registerUser(t, app.clientId);
    const { answer, browser } = await signIn(strictApp, user);
    const stop = await browser.get(answer.location!);
    const fields = formFields(stop.text);
    const resend = () => browser.post("/verify-email", { csrf_token: fields.csrfToken, request_id: fields.requestId });

    const soon = await resend();
    expect(soon.status).toBe(429);
    expect(Number(soon.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(Number(soon.headers.get("retry-after"))).toBeLessThanOrEqual(60);
    for (let i = 0; i < 4; i++) {
      t.clock!.advance(61_000);
      const sent = await resend();
      expect(sent.status).toBe(303);
      expect(sent.location).toBe(`/verify-email?request_id=${fields.requestId}&sent=1`);
    }
    expect(await mailsTo(user.email)).toHaveLength(5);
    t.clock!.advance(61_000);
    const hourly = await resend();
    expect(hourly.status).toBe(429);
    expect(Number(hourly.headers.get("retry-after"))).toBeGreaterThan(60);
    expect((await browser.get(`${answer.location!}&sent=1`)).text).toContain("We sent a new email");
    expect((await browser.post("/verify-email", { csrf_token: "forged", request_id: fields.requestId })).status).toBe(403);

    // The function the admin API calls: the same rules, and 409 once verified.
    t.clock!.advance(3600_000);
    expect(await t.service!.deps.accounts.resendVerification(user.id)).toBe(user.email);
    await open(await linkTo(user.email));
    await expect(t.service!.deps.accounts.resendVerification(user.id)).rejects.toMatchObject({ code: "email_already_verified" });
  });

  it("X-ID-EVF-7 verifying an address and changing to a verified one deliver user.updated", async () => {
    const receiver = await startReceiver();
    try {
      const world = { target: t, url: t.url, organizationId: "", token: freshAdminToken } as unknown as Parameters<typeof createWebhook>[0];
      await createWebhook(world, app.id, { url: receiver.url, events: ["user.updated"] });
      const user = await registerUser(t, app.clientId);
      await open(await linkTo(user.email));
      await receiver.waitFor(1);
      expect(receiver.received[0]!.json).toMatchObject({
        event: "user.updated",
        data: { userId: user.id, email: user.email, emailVerified: true, changedFields: ["emailVerified"] },
      });
      const next = uniqueEmail("moved");
      t.clock!.advance(61_000);
      await (await dashboardApi(user.id)).PATCH("/api/users/me", { body: { email: next } });
      await open(await linkTo(next));
      // Delivery is at least once: advancing the clock past the first delivery's lease while its
      // answer is still in flight sends it again, so the change's event is found by what it says.
      const changeEvent = () => receiver.received.map((r) => r.json).find((e) => e?.event === "user.updated" && e.data?.email === next);
      await waitUntil(
        () => changeEvent() !== undefined,
        5000,
        () => "no user.updated for the new address",
      );
      expect(changeEvent()).toMatchObject({
        event: "user.updated",
        data: { userId: user.id, email: next, emailVerified: true, changedFields: ["email", "emailVerified"] },
      });
    } finally {
      await receiver.close();
    }
  });
});
