/**
 * What ends a token (X-ID-TOK-5): revoking a refresh family, deleting or disabling an
 * application, deleting a user; and what does not (regenerating the client secret). Each event
 * is checked at every endpoint that accepts a token: userinfo, introspection, the admin and user
 * API (/api/*) and the token endpoint. Introspection and userinfo must agree on every token.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { identityTarget, type IdentityTarget } from "../harness/targets.ts";
import { request } from "../harness/http.ts";
import {
  adminTokenViaFlow,
  authorizeWithPassword,
  DASHBOARD_CLIENT_ID,
  dashboardTokensViaFlow,
  createApp,
  createUser,
  exchangeCode,
  tokenRequest,
  type TestApp,
} from "../harness/oauth-flow.ts";
import { NEEDS, skipOnDeployment } from "../harness/skip.ts";

let t: IdentityTarget;
beforeAll(async () => {
  t = await identityTarget();
});
afterAll(async () => t?.close());

type User = { id: string; email: string; password: string };
type Tokens = { access_token: string; refresh_token: string };

const SCOPE = "openid profile email offline_access";

/** An application of a fresh organization, with that organization's admin token (to delete or disable it over HTTP). */
async function appWithAdmin(clientType: "confidential" | "public" = "confidential") {
  const org = await t.createOrganization!();
  const app = await createApp(t, { organizationId: org.organizationId, clientType });
  return { app, admin: await adminTokenViaFlow(t, org.admin) };
}

const clientAuth = (a: TestApp) => ({ client_id: a.clientId, ...(a.clientSecret ? { client_secret: a.clientSecret } : {}) });

async function tokensFor(a: TestApp, user: User): Promise<Tokens> {
  const f = await authorizeWithPassword(t.url, {
    clientId: a.clientId,
    redirectUri: a.redirectUri,
    email: user.email,
    password: user.password,
    scope: SCOPE,
  });
  const res = await exchangeCode(t.url, f, {
    clientId: a.clientId,
    redirectUri: a.redirectUri,
    ...(a.clientSecret ? { clientSecret: a.clientSecret } : {}),
  });
  expect(res.status).toBe(200);
  return res.json;
}

const refresh = (a: TestApp, token: string) => tokenRequest(t.url, { grant_type: "refresh_token", refresh_token: token, ...clientAuth(a) });
const introspect = (a: TestApp, token: string) => tokenRequest(t.url, { token, ...clientAuth(a) }, undefined, "/oauth/introspect");

/**
 * How every endpoint that accepts an access token sees it: userinfo, GET /api/users/me, and
 * introspection by `introspector` (its own client, or a still-live one when the owner is gone).
 */
async function seen(accessToken: string, introspector: TestApp) {
  const userinfo = await request(t.url, "GET", "/oauth/userinfo", { token: accessToken });
  const me = await request(t.url, "GET", "/api/users/me", { token: accessToken });
  const intro = await introspect(introspector, accessToken);
  return {
    userinfo: userinfo.status,
    me: me.status,
    introspect: intro.status === 200 ? (intro.json.active as boolean) : intro.status,
    challenge: userinfo.headers.get("www-authenticate"),
  };
}

/** Live at userinfo and /api/users/me, and active at introspection: all three agree. */
async function expectLive(accessToken: string, owner: TestApp) {
  expect(await seen(accessToken, owner)).toMatchObject({ userinfo: 200, me: 200, introspect: true });
}

/** Refused everywhere at once: 401 invalid_token at userinfo and /api/users/me, and never active at introspection. */
async function expectEnded(accessToken: string, introspector: TestApp) {
  const s = await seen(accessToken, introspector);
  expect(s.userinfo).toBe(401);
  expect(s.challenge).toContain('error="invalid_token"');
  expect(s.me).toBe(401);
  expect(s.introspect === false || s.introspect === 401).toBe(true);
}

describe("X-ID-TOK-5 what ends a token", () => {
  it("X-ID-TOK-5 deleting a user ends their tokens at once at every endpoint: userinfo and introspection agree, /api/* and the refresh grant refuse them", async () => {
    const { app } = await appWithAdmin();
    const user = await createUser(t);
    const tokens = await tokensFor(app, user);
    const dashboard = await adminTokenViaFlow(t, user);
    await expectLive(tokens.access_token, app);

    expect((await request(t.url, "DELETE", "/api/users/me", { token: dashboard })).status).toBe(204);

    await expectEnded(tokens.access_token, app);
    expect((await introspect(app, tokens.access_token)).json).toEqual({ active: false });
    expect((await introspect(app, tokens.refresh_token)).json).toEqual({ active: false });
    expect((await request(t.url, "GET", "/api/users/me", { token: dashboard })).status).toBe(401);
    const r = await refresh(app, tokens.refresh_token);
    expect(r.status).toBe(400);
    expect(r.json.error).toBe("invalid_grant");
  });

  it("X-ID-TOK-5 deleting an organization admin ends their dashboard token at the administration API (401 invalid_token, not 403)", async (ctx) => {
    // On a deployment the only admin is QA's own: deleting it would end the run.
    if (t.external) return skipOnDeployment(ctx, NEEDS.organizations);
    const org = await t.createOrganization!();
    const admin = await adminTokenViaFlow(t, org.admin);
    expect((await request(t.url, "GET", "/api/applications", { token: admin })).status).toBe(200);
    expect((await request(t.url, "DELETE", "/api/users/me", { token: admin })).status).toBe(204);
    const after = await request(t.url, "GET", "/api/applications", { token: admin });
    expect(after.status).toBe(401);
    expect(after.headers.get("www-authenticate")).toContain('error="invalid_token"');
  });

  it("X-ID-TOK-5 deleting an application ends its access and refresh tokens at once at userinfo, /api/users/me, introspection and the token endpoint", async () => {
    const { app, admin } = await appWithAdmin();
    const witness = await createApp(t); // a live client to introspect with once the owner is gone
    const user = await createUser(t);
    const tokens = await tokensFor(app, user);
    await expectLive(tokens.access_token, app);

    expect((await request(t.url, "DELETE", `/api/applications/${app.id}`, { token: admin })).status).toBe(204);

    await expectEnded(tokens.access_token, witness);
    // The deleted client cannot authenticate any more, so it cannot introspect or refresh either.
    expect((await introspect(app, tokens.access_token)).status).toBe(401);
    expect((await refresh(app, tokens.refresh_token)).status).toBe(401);
  });

  it("X-ID-TOK-5 disabling an application ends its tokens, codes and pending requests at once and for good; while disabled its client id is refused everywhere", async () => {
    const { app, admin } = await appWithAdmin();
    const user = await createUser(t);
    const tokens = await tokensFor(app, user);
    const pendingCode = await authorizeWithPassword(t.url, {
      clientId: app.clientId,
      redirectUri: app.redirectUri,
      email: user.email,
      password: user.password,
      scope: SCOPE,
    });
    await expectLive(tokens.access_token, app);

    const disabled = await request(t.url, "PATCH", `/api/applications/${app.id}`, { token: admin, json: { enabled: false } });
    expect(disabled.status).toBe(200);
    expect(disabled.body.enabled).toBe(false);
    expect((await request(t.url, "GET", `/api/applications/${app.id}`, { token: admin })).body.enabled).toBe(false);

    const witness = await createApp(t);
    await expectEnded(tokens.access_token, witness);
    // The client id is refused like an unknown one: client authentication, the authorization page, registration.
    const refused = await refresh(app, tokens.refresh_token);
    expect(refused.status).toBe(401);
    expect(refused.json.error).toBe("invalid_client");
    expect((await introspect(app, tokens.access_token)).status).toBe(401);
    expect((await tokenRequest(t.url, { token: tokens.refresh_token, ...clientAuth(app) }, undefined, "/oauth/revoke")).status).toBe(401);
    const page = await request(
      t.url,
      "GET",
      `/oauth/authorize?${new URLSearchParams({ client_id: app.clientId, redirect_uri: app.redirectUri, response_type: "code", scope: "openid" })}`,
    );
    expect(page.status).toBe(400);
    expect(page.headers.get("location")).toBeNull();
    const register = await request(t.url, "POST", "/api/users", {
      json: {
        clientId: app.clientId,
        email: `disabled-${Date.now()}@example.com`,
        password: "pw-0123456789abcdef",
        firstName: "A",
        lastName: "B",
      },
    });
    expect(register.status).toBe(400);
    expect(register.body.code).toBe("unknown_client");

    // Enabled again: nothing issued before comes back; new sign-ins work.
    const enabled = await request(t.url, "PATCH", `/api/applications/${app.id}`, { token: admin, json: { enabled: true } });
    expect(enabled.body.enabled).toBe(true);
    await expectEnded(tokens.access_token, app);
    expect((await introspect(app, tokens.refresh_token)).json).toEqual({ active: false });
    const stale = await refresh(app, tokens.refresh_token);
    expect(stale.status).toBe(400);
    expect(stale.json.error).toBe("invalid_grant");
    const staleCode = await exchangeCode(t.url, pendingCode, {
      clientId: app.clientId,
      redirectUri: app.redirectUri,
      clientSecret: app.clientSecret!,
    });
    expect(staleCode.status).toBe(400);
    expect(staleCode.json.error).toBe("invalid_grant");
    await expectLive((await tokensFor(app, user)).access_token, app);
  });

  it("X-ID-TOK-5 revoking a refresh token ends its family's access tokens at userinfo, /api/users/me and introspection, and at the admin API for a dashboard family", async () => {
    const { app } = await appWithAdmin();
    const user = await createUser(t);
    const tokens = await tokensFor(app, user);
    const rotated = (await refresh(app, tokens.refresh_token)).json as Tokens;
    await expectLive(rotated.access_token, app);
    expect((await tokenRequest(t.url, { token: rotated.refresh_token, ...clientAuth(app) }, undefined, "/oauth/revoke")).status).toBe(200);
    await expectEnded(tokens.access_token, app);
    await expectEnded(rotated.access_token, app);
    expect((await introspect(app, rotated.refresh_token)).json).toEqual({ active: false });

    // The dashboard is a public client: its family is revoked with client_id alone, and its admin token ends with it.
    const org = await t.createOrganization!();
    const dash = await dashboardTokensViaFlow(t, org.admin, SCOPE);
    expect((await request(t.url, "GET", "/api/applications", { token: dash.access_token })).status).toBe(200);
    expect(
      (await tokenRequest(t.url, { token: dash.refresh_token!, client_id: DASHBOARD_CLIENT_ID }, undefined, "/oauth/revoke")).status,
    ).toBe(200);
    const after = await request(t.url, "GET", "/api/applications", { token: dash.access_token });
    expect(after.status).toBe(401);
    expect(after.headers.get("www-authenticate")).toContain('error="invalid_token"');
  });

  it("X-ID-TOK-5 regenerating the client secret ends the old secret, not the tokens: issued tokens stay live and refresh with the new secret", async () => {
    const { app, admin } = await appWithAdmin();
    const user = await createUser(t);
    const tokens = await tokensFor(app, user);
    const regenerated = await request(t.url, "POST", `/api/applications/${app.id}/regenerate-secret`, { token: admin });
    expect(regenerated.status).toBe(200);
    const renewed: TestApp = { ...app, clientSecret: regenerated.body.clientSecret };
    expect((await refresh(app, tokens.refresh_token)).status).toBe(401);
    expect((await introspect(app, tokens.access_token)).status).toBe(401);
    await expectLive(tokens.access_token, renewed);
    expect((await refresh(renewed, tokens.refresh_token)).status).toBe(200);
  });

  it("X-ID-TOK-5 every instance sees an ending at once: a token revoked, a user deleted or an application disabled through one instance is refused by another on the same database at its next request", async (ctx) => {
    if (!t.anotherInstance) return skipOnDeployment(ctx, NEEDS.anotherInstance);
    const other = await t.anotherInstance!();
    try {
      const { app, admin } = await appWithAdmin();
      const user = await createUser(t);
      const victim = await createUser(t);
      const [revoked, ofDeletedUser, ofDisabledApp] = [
        await tokensFor(app, user),
        await tokensFor(app, victim),
        await tokensFor(app, user),
      ];
      const elsewhere = (token: string) => request(other.url, "GET", "/oauth/userinfo", { token });
      for (const tokens of [revoked, ofDeletedUser, ofDisabledApp]) expect((await elsewhere(tokens.access_token)).status).toBe(200);

      expect((await tokenRequest(t.url, { token: revoked.access_token, ...clientAuth(app) }, undefined, "/oauth/revoke")).status).toBe(200);
      expect((await elsewhere(revoked.access_token)).status).toBe(401);

      const dashboard = await adminTokenViaFlow(t, victim);
      expect((await request(t.url, "DELETE", "/api/users/me", { token: dashboard })).status).toBe(204);
      expect((await elsewhere(ofDeletedUser.access_token)).status).toBe(401);
      expect(
        (await tokenRequest(other.url, { token: ofDeletedUser.access_token, ...clientAuth(app) }, undefined, "/oauth/introspect")).json,
      ).toEqual({ active: false });

      expect((await request(t.url, "PATCH", `/api/applications/${app.id}`, { token: admin, json: { enabled: false } })).status).toBe(200);
      expect((await elsewhere(ofDisabledApp.access_token)).status).toBe(401);
      expect(
        (await tokenRequest(other.url, { grant_type: "refresh_token", refresh_token: ofDisabledApp.refresh_token, ...clientAuth(app) }))
          .status,
      ).toBe(401);
    } finally {
      await other.close();
    }
  });

  it("X-ID-TOK-5 a public client's tokens end with its application too (the client authenticates with client_id alone)", async () => {
    const { app, admin } = await appWithAdmin("public");
    const witness = await createApp(t);
    const user = await createUser(t);
    const tokens = await tokensFor(app, user);
    expect((await request(t.url, "GET", "/oauth/userinfo", { token: tokens.access_token })).status).toBe(200);
    expect((await request(t.url, "PATCH", `/api/applications/${app.id}`, { token: admin, json: { enabled: false } })).status).toBe(200);
    await expectEnded(tokens.access_token, witness);
    expect((await refresh(app, tokens.refresh_token)).status).toBe(401);
  });
});
