/**
 * An admin's account-wide mails for a user of the organization: a forced password reset
 * (X-ID-UADM-8) and a new verification link (X-ID-UADM-9). The mail is read from the service's
 * outbox, the clock is the test's (the resend limits), and `user.updated` is received by a webhook
 * receiver on 127.0.0.1: in-process only.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bearer, identityApi, type IdentityApi } from "../harness/api.ts";
import { request } from "../harness/http.ts";
import { adminToken, createApp, createUser, registerUser, type Organization, type TestApp } from "../harness/identity-fixtures.ts";
import { authorizeWithPassword, exchangeCode, tokenRequest } from "../harness/oauth-flow.ts";
import { identityOnDeployment, NEEDS, skipFileOnDeployment } from "../harness/skip.ts";
import { identityTarget, type IdentityTarget } from "../harness/targets.ts";
import { createWebhook, type Receiver, startReceiver, WEBHOOK_TEST_ENV } from "./webhooks-fixtures.ts";

skipFileOnDeployment(identityOnDeployment(), NEEDS.webhookReceivers);

let t: IdentityTarget;
let api: IdentityApi;
const receivers: Receiver[] = [];
beforeAll(async () => {
  if (identityOnDeployment()) return;
  t = await identityTarget({ env: WEBHOOK_TEST_ENV });
  api = identityApi(t);
});
afterAll(async () => {
  for (const r of receivers.splice(0)) await r.close();
  await t?.close();
});

type User = { id: string; email: string; password: string };
const SCOPE = "openid profile email offline_access";
const RESET = "/api/organizations/current/users/{userId}/password-reset";
const VERIFY = "/api/organizations/current/users/{userId}/verification-email";
const UNKNOWN = "11111111-2222-4333-8444-555555555555";

/** A fresh organization with one application and its admin's dashboard token (minted now: tests move the clock). */
async function organization(): Promise<{ org: Organization; app: TestApp; admin: () => Promise<string> }> {
  const org = await t.createOrganization!();
  const app = await createApp(t, { organizationId: org.organizationId });
  return { org, app, admin: () => adminToken(t, org) };
}

/** Signs the user in to the application through the hosted form and exchanges the code: a user of it, with tokens. */
async function tokensFor(app: TestApp, user: User) {
  const flow = await authorizeWithPassword(t.url, {
    clientId: app.clientId,
    redirectUri: app.redirectUri,
    email: user.email,
    password: user.password,
    scope: SCOPE,
  });
  const res = await exchangeCode(t.url, flow, { clientId: app.clientId, redirectUri: app.redirectUri, clientSecret: app.clientSecret! });
  expect(res.status).toBe(200);
  return res.json as { access_token: string; refresh_token: string };
}

const path = (userId: string) => ({ params: { path: { userId } } });
const forceReset = async (admin: () => Promise<string>, userId: string) => api.POST(RESET, { ...path(userId), ...bearer(await admin()) });
const sendVerification = async (admin: () => Promise<string>, userId: string) =>
  api.POST(VERIFY, { ...path(userId), ...bearer(await admin()) });

/** The messages of `template` queued to `to`, oldest first, once the dispatcher has sent what is due. */
async function mailTo(to: string, template: string) {
  await t.service!.deps.mail.dispatchDue();
  return t.service!.db("mail_outbox").where({ recipient: to.toLowerCase(), template }).orderBy("created_at");
}

/** Whether the account's password is `password` (the domain's check, as sign-in makes it). */
async function passwordWorks(user: { email: string; password: string }, password = user.password) {
  const found = await t.service!.deps.accounts.findUserByEmail(user.email);
  return t.service!.deps.accounts.verifyPassword(found, password);
}

/** The organization's audit events of the user of one type (`user.updated` unless told), newest first. */
async function auditOf(
  admin: () => Promise<string>,
  userId: string,
  type: "user.updated" | "user.password_reset_requested" = "user.updated",
) {
  const res = await api.GET("/api/audit-events", { params: { query: { type, userId } }, ...bearer(await admin()) });
  expect(res.response.status).toBe(200);
  return res.data!.items;
}

/** The operations without a token (401), with a user's token who administers nothing (403), with a malformed id (400). */
async function expectGuarded(route: typeof RESET | typeof VERIFY, member: User) {
  const raw = route.replace("{userId}", member.id);
  expect((await request(t.url, "POST", raw)).status).toBe(401);
  expect((await request(t.url, "POST", raw, { token: "not-a-token" })).status).toBe(401);
  const notAdmin = await adminToken(t, { organizationId: "", admin: { ...member, userId: member.id } });
  const res = await api.POST(route, { ...path(member.id), ...bearer(notAdmin) });
  expect(res.response.status).toBe(403);
  expect(res.error).toMatchObject({ code: "not_an_admin" });
}

describe("X-ID-UADM-8 an admin forces a password reset", () => {
  it("X-ID-UADM-8 ends the password, sessions and tokens, mails a reset link, delivers user.updated and is audited", async () => {
    const { app, admin } = await organization();
    const r = await startReceiver();
    receivers.push(r);
    await createWebhook({ target: t, url: t.url, token: admin } as unknown as Parameters<typeof createWebhook>[0], app.id, {
      url: r.url,
      events: ["user.updated"],
    });
    const user = await createUser(t);
    const tokens = await tokensFor(app, user);

    const res = await forceReset(admin, user.id);
    expect(res.response.status).toBe(204);
    expect(await passwordWorks(user)).toBe(false);
    const refreshed = await tokenRequest(t.url, {
      grant_type: "refresh_token",
      refresh_token: tokens.refresh_token,
      client_id: app.clientId,
      client_secret: app.clientSecret!,
    });
    expect(refreshed.status).toBe(400);
    expect((await request(t.url, "GET", "/oauth/userinfo", { token: tokens.access_token })).status).toBe(401);
    const mails = await mailTo(user.email, "password-reset");
    expect(mails).toHaveLength(1);
    expect(mails[0]!.text_body).toMatch(/\/reset-password\?token=/);

    await r.waitFor(1);
    expect(r.received[0]!.json).toMatchObject({ event: "user.updated", data: { userId: user.id, changedFields: ["password"] } });
    const [event] = await auditOf(admin, user.id, "user.password_reset_requested");
    expect(event).toMatchObject({ actor: { type: "admin" }, details: { via: "admin" } });
  });

  it("X-ID-UADM-8 an account of another organization too is 409 account_shared, the admin's own is 409 own_account, anyone else 404; none is reset", async () => {
    const a = await organization();
    const b = await organization();
    const shared = await createUser(t);
    await tokensFor(a.app, shared);
    await tokensFor(b.app, shared);
    const refused = await forceReset(a.admin, shared.id);
    expect(refused.response.status).toBe(409);
    expect(refused.error).toMatchObject({ code: "account_shared" });
    expect(await passwordWorks(shared)).toBe(true);
    // Disabling stays the organization's way to end the user's access.
    expect(
      (await api.POST("/api/organizations/current/users/{userId}/disable", { ...path(shared.id), ...bearer(await a.admin()) })).response
        .status,
    ).toBe(200);

    const own = await forceReset(a.admin, a.org.admin.userId);
    expect(own.response.status).toBe(409);
    expect(own.error).toMatchObject({ code: "own_account" });
    expect(await passwordWorks(a.org.admin)).toBe(true);

    const stranger = await createUser(t);
    await tokensFor(b.app, stranger);
    for (const id of [stranger.id, UNKNOWN]) {
      const res = await forceReset(a.admin, id);
      expect(res.response.status).toBe(404);
      expect(res.error).toMatchObject({ code: "not_found" });
    }
    expect(await passwordWorks(stranger)).toBe(true);
    expect(await mailTo(stranger.email, "password-reset")).toHaveLength(0);
    expect((await request(t.url, "POST", RESET.replace("{userId}", "not-a-uuid"), { token: await a.admin() })).status).toBe(400);
    await expectGuarded(RESET, stranger);
  });
});

describe("X-ID-UADM-9 an admin mails a new verification link", () => {
  it("X-ID-UADM-9 mails a link as the user's own resend does, under its limits (429 Retry-After), audited; a verified address is 409", async () => {
    const { app, admin } = await organization();
    const user = await registerUser(t, app.clientId);
    // Sign-up mailed the first link a moment ago: the one-a-minute limit holds.
    const soon = await sendVerification(admin, user.id);
    expect(soon.response.status).toBe(429);
    expect(soon.error).toMatchObject({ code: "rate_limited" });
    expect(Number(soon.response.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(Number(soon.response.headers.get("retry-after"))).toBeLessThanOrEqual(60);

    t.clock!.advance(61_000);
    const sent = await sendVerification(admin, user.id);
    expect(sent.response.status).toBe(204);
    const mails = await mailTo(user.email, "email-verification");
    expect(mails).toHaveLength(2);
    const [event] = await auditOf(admin, user.id);
    expect(event).toMatchObject({ actor: { type: "admin" }, details: { changedFields: [], action: "verification_email_sent" } });

    const link = /(\/verify-email\/confirm\?token=[A-Za-z0-9_%-]+)/.exec(mails.at(-1)!.text_body)![1]!;
    expect((await request(t.url, "GET", link)).status).toBe(200);
    t.clock!.advance(61_000);
    const verified = await sendVerification(admin, user.id);
    expect(verified.response.status).toBe(409);
    expect(verified.error).toMatchObject({ code: "email_already_verified" });
    expect(await mailTo(user.email, "email-verification")).toHaveLength(2);
  });

  it("X-ID-UADM-9 a user not of the organization is 404 and is mailed nothing", async () => {
    const a = await organization();
    const b = await organization();
    const stranger = await registerUser(t, b.app.clientId);
    t.clock!.advance(61_000);
    for (const id of [stranger.id, UNKNOWN]) {
      const res = await sendVerification(a.admin, id);
      expect(res.response.status).toBe(404);
      expect(res.error).toMatchObject({ code: "not_found" });
    }
    expect(await mailTo(stranger.email, "email-verification")).toHaveLength(1);
    expect((await request(t.url, "POST", VERIFY.replace("{userId}", "not-a-uuid"), { token: await a.admin() })).status).toBe(400);
    await expectGuarded(VERIFY, stranger);
  });
});
