/**
 * X-ID-AUD-8: what password reset, email verification and passkeys record in the audit log, each
 * with the request's client, never a link or token, and nothing for a change that rolled back. The
 * rows are read from the service's table (the account's own events belong to no organization,
 * X-ID-AUD-3); mail is read from the local mailbox: in-process only.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { identityApi } from "../harness/api.ts";
import { readBody } from "../harness/http.ts";
import { createApp, createUser, type Organization, type TestApp } from "../harness/identity-fixtures.ts";
import { authorizationPath, authorizeWithPassword, Browser, formFields, loginForm, pkcePair } from "../harness/oauth-flow.ts";
import { identityOnDeployment, NEEDS, skipFileOnDeployment } from "../harness/skip.ts";
import { identityTarget, type IdentityTarget, uniqueEmail } from "../harness/targets.ts";
import { SoftwareAuthenticator } from "../harness/webauthn.ts";
import { type Receiver, startReceiver, WEBHOOK_TEST_ENV, waitUntil } from "./webhooks-fixtures.ts";
import { issueResetLink } from "../../handlers/identity/domain/accounts/password-reset.ts";
import { createIdentityStorage } from "../../handlers/identity/storage/index.ts";

interface Row {
  type: string;
  actor_type: string;
  actor_id: string | null;
  user_id: string | null;
  application_id: string | null;
  organization_id: string | null;
  client_address: string | null;
  user_agent: string | null;
  details: string;
}

let t: IdentityTarget;
let org: Organization;
let app: TestApp;
let receiver: Receiver;
skipFileOnDeployment(identityOnDeployment(), NEEDS.clock);
beforeAll(async () => {
  if (identityOnDeployment()) return;
  t = await identityTarget({ env: WEBHOOK_TEST_ENV });
  t.clock!.freeze();
  org = await t.createOrganization!();
  app = await createApp(t, { organizationId: org.organizationId });
  receiver = await startReceiver();
  const { token } = await t.service!.ctx.accessTokens.issue({
    userId: org.admin.userId,
    clientId: "identity-dashboard",
    scopes: ["openid"],
  });
  const created = await identityApi(t, { token }).POST("/api/applications/{appId}/webhooks", {
    params: { path: { appId: app.id } },
    body: { url: receiver.url, events: ["user.password_reset"] },
  });
  expect(created.response.status).toBe(201);
});
afterAll(async () => {
  await receiver?.close();
  await t?.close();
});

const AGENT = "AuditLifecycle/1.0";
const pkce = pkcePair();

const rowsOf = async (userId: string): Promise<Row[]> =>
  t
    .service!.db("audit_events")
    .where({ user_id: userId })
    .orderBy([{ column: "occurred_at" }, { column: "id" }]);
const rowOf = async (userId: string, type: string) => (await rowsOf(userId)).find((r) => r.type === type);
const countOf = async (type: string) => Number((await t.service!.db("audit_events").where({ type }).count({ n: "*" }))[0]!.n);

/** A browser that says who it is. */
const browser = () =>
  new Browser(t.url, ((input: string | URL, init?: RequestInit) =>
    fetch(input, { ...init, headers: { ...(init?.headers as Record<string, string>), "user-agent": AGENT } })) as typeof fetch);

/** The login page of `app` in `b`: its fields. */
async function loginFields(b: Browser) {
  const page = await b.get(
    authorizationPath({
      clientId: app.clientId,
      redirectUri: app.redirectUri,
      challenge: pkce.challenge,
      method: "S256",
      scope: "openid",
      state: "s",
    }),
  );
  return formFields(page.text);
}

/** The newest mail of `template` to `to`: the link it carries. */
async function linkIn(to: string, template: string, pattern: RegExp): Promise<string> {
  await t.service!.deps.mail.dispatchDue();
  const message = (await t.service!.deps.mail.mailbox!.newest()).find((m) => m.recipient === to.toLowerCase() && m.template === template);
  const link = pattern.exec(message?.text_body ?? "")?.[0];
  if (!link) throw new Error(`no ${template} mail to ${to}`);
  return link;
}

describe("password reset", () => {
  /** Asks for a link on the forgot-password page of `app`'s sign-in. */
  async function askReset(email: string) {
    t.clock!.advance(1000);
    const b = browser();
    const { requestId } = await loginFields(b);
    const page = await b.get(`/forgot-password?request_id=${requestId}`);
    const sent = await b.post("/forgot-password", { csrf_token: formFields(page.text).csrfToken, email, request_id: requestId });
    expect(sent.status).toBe(303);
  }

  it("X-ID-AUD-8 a link asked for an account and the reset done are recorded, never the token; an unknown address records nothing", async () => {
    const user = await createUser(t);
    await authorizeWithPassword(t.url, {
      clientId: app.clientId,
      redirectUri: app.redirectUri,
      email: user.email,
      password: user.password,
    });
    const before = await countOf("user.password_reset_requested");
    await askReset(uniqueEmail("nobody"));
    expect(await countOf("user.password_reset_requested")).toBe(before);

    await askReset(user.email);
    expect(await rowOf(user.id, "user.password_reset_requested")).toMatchObject({
      actor_type: "user",
      actor_id: null,
      application_id: app.id,
      organization_id: org.organizationId,
      user_agent: AGENT,
      details: '{"via":"email"}',
    });
    const link = await linkIn(user.email, "password-reset", /http:\/\/\S+\/reset-password\?token=[A-Za-z0-9_%-]+/);
    const token = decodeURIComponent(new URL(link).searchParams.get("token")!);
    const b = browser();
    const page = await b.get(`/reset-password?token=${encodeURIComponent(token)}`);
    const done = await b.post("/reset-password", {
      csrf_token: formFields(page.text).csrfToken,
      token,
      password: "a brand new passphrase",
    });
    expect(done.status).toBe(303);
    expect(await rowOf(user.id, "user.password_reset")).toMatchObject({
      actor_type: "user",
      actor_id: user.id,
      application_id: app.id,
      user_agent: AGENT,
    });
    // X-ID-AUD-7: a webhook event too, to the application's webhooks.
    await waitUntil(() => receiver.received.some((r) => r.json?.event === "user.password_reset" && r.json?.data?.userId === user.id));
    const stored = JSON.stringify(await rowsOf(user.id));
    expect(stored).not.toContain(token);
    expect(stored).not.toContain("a brand new passphrase");
  });

  it("X-ID-AUD-8 a request through an application the account never used names no application (no organization's admin sees it)", async () => {
    const user = await createUser(t);
    await askReset(user.email);
    expect(await rowOf(user.id, "user.password_reset_requested")).toMatchObject({ application_id: null, organization_id: null });
  });

  it("X-ID-AUD-8 the admin's forced reset is recorded with the admin as actor, the operator's reset-link command as system", async () => {
    const user = await createUser(t);
    expect(
      await t.service!.deps.accounts.forcePasswordReset(user.id, { adminId: org.admin.userId, organizationId: org.organizationId }),
    ).toBe(true);
    expect(await rowOf(user.id, "user.password_reset_requested")).toMatchObject({
      actor_type: "admin",
      actor_id: org.admin.userId,
      organization_id: org.organizationId,
      details: '{"via":"admin"}',
    });
    const issued = await issueResetLink({ storage: createIdentityStorage(t.service!.db), clock: t.clock!, issuer: t.url }, user.email);
    expect(issued).toBeDefined();
    const rows = (await rowsOf(user.id)).filter((r) => r.type === "user.password_reset_requested");
    expect(rows.at(-1)).toMatchObject({ actor_type: "system", actor_id: null, organization_id: null, details: '{"via":"admin_command"}' });
    expect(JSON.stringify(rows)).not.toContain(new URL(issued!.link).searchParams.get("token")!);
  });
});

describe("email verification", () => {
  const CONFIRM = /http:\/\/\S+\/verify-email\/confirm\?token=[A-Za-z0-9_%-]+/;
  const open = (link: string) => browser().get(new URL(link).pathname + new URL(link).search);
  async function dashboardApi(userId: string) {
    const { token } = await t.service!.ctx.accessTokens.issue({
      userId,
      clientId: "identity-dashboard",
      scopes: ["openid", "profile", "email"],
    });
    return identityApi(t, { token });
  }

  it("X-ID-AUD-8 an address verified, a change asked for and its taking effect are recorded, never the address", async () => {
    const user = await createUser(t);
    await t.service!.db("users").where({ id: user.id }).update({ email_verified: false });
    t.clock!.advance(120_000); // past the resend interval of the sign-up's own mail (X-ID-EVF-6)
    await t.service!.deps.accounts.resendVerification(user.id);
    expect((await open(await linkIn(user.email, "email-verification", CONFIRM))).status).toBe(200);
    expect(await rowOf(user.id, "user.email_verified")).toMatchObject({ actor_type: "user", actor_id: user.id, user_agent: AGENT });

    const next = uniqueEmail("moved");
    t.clock!.advance(120_000);
    const changed = await (await dashboardApi(user.id)).PATCH("/api/users/me", { body: { email: next } });
    expect(changed.response.status).toBe(200);
    expect(await rowOf(user.id, "user.email_change_requested")).toMatchObject({ actor_type: "user", actor_id: user.id, details: "{}" });
    expect(await rowOf(user.id, "user.email_changed")).toBeUndefined();
    expect((await open(await linkIn(next, "email-verification", CONFIRM))).status).toBe(200);
    expect(await rowOf(user.id, "user.email_changed")).toMatchObject({ actor_id: user.id, user_agent: AGENT });
    expect(JSON.stringify(await rowsOf(user.id))).not.toContain(next);
  });

  it("X-ID-AUD-8 a change refused when its link is used (the address taken meanwhile) records nothing", async () => {
    const user = await createUser(t);
    const next = uniqueEmail("taken");
    expect((await (await dashboardApi(user.id)).PATCH("/api/users/me", { body: { email: next } })).response.status).toBe(200);
    const link = await linkIn(next, "email-verification", CONFIRM);
    await t.service!.db("users").insert({
      ...(await t.service!.db("users").where({ id: user.id }).first()),
      id: crypto.randomUUID(),
      email: next,
    });
    expect((await open(link)).status).toBe(409);
    expect(await rowOf(user.id, "user.email_changed")).toBeUndefined();
  });
});

describe("passkeys", () => {
  const device = () => new SoftwareAuthenticator(new URL(t.url).hostname, new URL(t.url).origin);
  async function postJson(b: Browser, path: string, body: unknown) {
    const res = await fetch(`${t.url}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", cookie: b.cookieHeader() },
      body: JSON.stringify(body),
    });
    return { status: res.status, ...(await readBody(res)) };
  }
  const passkeyIds = (html: string) => [...html.matchAll(/action="\/account\/passkeys\/([0-9a-f-]{36})\/rename"/g)].map((m) => m[1]!);

  it("X-ID-AUD-8 a passkey added, renamed and removed is recorded; a refused passkey sign-in is a failed sign-in", async () => {
    const user = await createUser(t);
    const b = browser();
    expect((await b.post("/oauth/authorize", loginForm(await loginFields(b), user))).status).toBe(303);
    const laptop = device();
    const { csrfToken } = formFields((await b.get("/account/passkeys")).text);
    const options = await postJson(b, "/account/passkeys/options", { csrf_token: csrfToken });
    const credential = JSON.stringify(laptop.register(options.json));
    expect((await b.post("/account/passkeys", { csrf_token: csrfToken, name: "Laptop", credential })).status).toBe(303);
    const [id] = passkeyIds((await b.get("/account/passkeys")).text);
    expect(await rowOf(user.id, "user.factor_enrolled")).toMatchObject({
      actor_id: user.id,
      user_agent: AGENT,
      details: JSON.stringify({ kind: "passkey", passkeyId: id }),
    });
    // The same answer again: refused (its challenge is spent), nothing recorded.
    expect((await b.post("/account/passkeys", { csrf_token: csrfToken, name: "Laptop", credential })).status).toBe(400);
    expect((await rowsOf(user.id)).filter((r) => r.type === "user.factor_enrolled")).toHaveLength(1);

    expect((await b.post(`/account/passkeys/${id}/rename`, { csrf_token: csrfToken, name: "Work" })).status).toBe(303);
    expect(await rowOf(user.id, "user.passkey_renamed")).toMatchObject({ details: JSON.stringify({ passkeyId: id }) });

    // A bad signature from the registered passkey: a failed sign-in of its owner, through the application.
    const other = browser();
    const f = await loginFields(other);
    const signInOptions = await postJson(other, "/oauth/authorize/passkey/options", { csrf_token: f.csrfToken, request_id: f.requestId });
    const assertion = JSON.stringify(laptop.assert(signInOptions.json.challenge, { badSignature: true }));
    const refused = await other.post("/oauth/authorize/passkey", {
      csrf_token: f.csrfToken,
      request_id: f.requestId,
      credential: assertion,
    });
    expect(refused.status).toBe(400);
    expect(await rowOf(user.id, "user.sign_in_failed")).toMatchObject({
      actor_type: "user",
      actor_id: null,
      application_id: app.id,
      user_agent: AGENT,
      details: JSON.stringify({ method: "passkey", reason: "invalid_credentials" }),
    });

    expect((await b.post(`/account/passkeys/${id}/remove`, { csrf_token: csrfToken, password: user.password })).status).toBe(303);
    expect(await rowOf(user.id, "user.factor_removed")).toMatchObject({ details: JSON.stringify({ kind: "passkey", passkeyId: id }) });
  });
});
