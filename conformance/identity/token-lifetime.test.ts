/**
 * What ends a token (X-ID-TOK-5): revoking a refresh family, deleting or disabling an
 * application, deleting a user; and what does not (regenerating the client secret). Each event
 * is checked at every endpoint that accepts a token: userinfo, introspection, the admin and user
 * API (/api/*) and the token endpoint. Introspection and userinfo must agree on every token.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { identityTarget, type IdentityTarget } from "../harness/targets.ts";
import { bearer, identityApi, type IdentityApi } from "../harness/api.ts";
import { request } from "../harness/http.ts";
import { createApp, createUser, type TestApp } from "../harness/identity-fixtures.ts";
import {
  adminTokenViaFlow,
  authorizeWithPassword,
  DASHBOARD_CLIENT_ID,
  dashboardTokensViaFlow,
  exchangeCode,
  tokenRequest,
} from "../harness/oauth-flow.ts";
import { NEEDS, skipOnDeployment, skipWhenRegistrationRefused } from "../harness/skip.ts";

let t: IdentityTarget;
/** A typed client without a token; each call names its own (`bearer`). */
let api: IdentityApi;
beforeAll(async () => {
  t = await identityTarget();
  api = identityApi(t);
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

/** PATCH /api/applications/{appId} { enabled } as the organization's admin. */
const setEnabled = (a: TestApp, admin: string, enabled: boolean) =>
  api.PATCH("/api/applications/{appId}", { params: { path: { appId: a.id } }, body: { enabled }, ...bearer(admin) });

const refresh = (a: TestApp, token: string) => tokenRequest(t.url, { grant_type: "refresh_token", refresh_token: token, ...clientAuth(a) });
const introspect = (a: TestApp, token: string) => tokenRequest(t.url, { token, ...clientAuth(a) }, undefined, "/oauth/introspect");

/**
 * How every endpoint that accepts an access token sees it: userinfo, GET /api/users/me, and
 * introspection by `introspector` (its own client, or a still-live one when the owner is gone).
 * A token that should be live goes through the typed client; one that should have ended is sent
 * raw, on purpose: that the token no longer works is what is checked.
 */
async function seen(accessToken: string, introspector: TestApp, ended: boolean) {
  const [userinfo, me] = ended
    ? [
        await request(t.url, "GET", "/oauth/userinfo", { token: accessToken }),
        await request(t.url, "GET", "/api/users/me", { token: accessToken }),
      ]
    : [(await api.GET("/oauth/userinfo", bearer(accessToken))).response, (await api.GET("/api/users/me", bearer(accessToken))).response];
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
  expect(await seen(accessToken, owner, false)).toMatchObject({ userinfo: 200, me: 200, introspect: true });
}

/** Refused everywhere at once: 401 invalid_token at userinfo and /api/users/me, and never active at introspection. */
async function expectEnded(accessToken: string, introspector: TestApp) {
  const s = await seen(accessToken, introspector, true);
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

    expect((await api.DELETE("/api/users/me", bearer(dashboard))).response.status).toBe(204);

    await expectEnded(tokens.access_token, app);
    expect((await introspect(app, tokens.access_token)).json).toEqual({ active: false });
    expect((await introspect(app, tokens.refresh_token)).json).toEqual({ active: false });
    // The deleted user's token: raw, on purpose.
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
    expect((await api.GET("/api/applications", bearer(admin))).response.status).toBe(200);
    expect((await api.DELETE("/api/users/me", bearer(admin))).response.status).toBe(204);
    // The deleted admin's token: raw, on purpose.
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

    const deleted = await api.DELETE("/api/applications/{appId}", { params: { path: { appId: app.id } }, ...bearer(admin) });
    expect(deleted.response.status).toBe(204);

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

    const disabled = await setEnabled(app, admin, false);
    expect(disabled.response.status).toBe(200);
    expect(disabled.data!.enabled).toBe(false);
    const got = await api.GET("/api/applications/{appId}", { params: { path: { appId: app.id } }, ...bearer(admin) });
    expect(got.data!.enabled).toBe(false);

    const witness = await createApp(t);
    await expectEnded(tokens.access_token, witness);
    // The client id is refused like an unknown one: client authentication, the authorization page, registration.
    const refused = await refresh(app, tokens.refresh_token);
    expect(refused.status).toBe(401);
    expect(refused.json.error).toBe("invalid_client");
    expect((await introspect(app, tokens.access_token)).status).toBe(401);
    expect((await tokenRequest(t.url, { token: tokens.refresh_token, ...clientAuth(app) }, undefined, "/oauth/revoke")).status).toBe(401);
    // The hosted authorization page is not in the SDK document: raw.
    const page = await request(
      t.url,
      "GET",
      `/oauth/authorize?${new URLSearchParams({ client_id: app.clientId, redirect_uri: app.redirectUri, response_type: "code", scope: "openid" })}`,
    );
    expect(page.status).toBe(400);
    expect(page.headers.get("location")).toBeNull();
    const register = await api.POST("/api/users", {
      body: {
        clientId: app.clientId,
        email: `disabled-${Date.now()}@example.com`,
        password: "pw-0123456789abcdef",
        firstName: "A",
        lastName: "B",
      },
    });
    skipWhenRegistrationRefused(t, register.response.status, register.error);
    expect(register.response.status).toBe(400);
    expect(register.error!.code).toBe("unknown_client");

    // Enabled again: nothing issued before comes back; new sign-ins work.
    const enabled = await setEnabled(app, admin, true);
    expect(enabled.data!.enabled).toBe(true);
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
    expect((await api.GET("/api/applications", bearer(dash.access_token))).response.status).toBe(200);
    expect(
      (await tokenRequest(t.url, { token: dash.refresh_token!, client_id: DASHBOARD_CLIENT_ID }, undefined, "/oauth/revoke")).status,
    ).toBe(200);
    // The revoked family's token: raw, on purpose.
    const after = await request(t.url, "GET", "/api/applications", { token: dash.access_token });
    expect(after.status).toBe(401);
    expect(after.headers.get("www-authenticate")).toContain('error="invalid_token"');
  });

  it("X-ID-TOK-5 regenerating the client secret ends the old secret, not the tokens: issued tokens stay live and refresh with the new secret", async () => {
    const { app, admin } = await appWithAdmin();
    const user = await createUser(t);
    const tokens = await tokensFor(app, user);
    const regenerated = await api.POST("/api/applications/{appId}/regenerate-secret", {
      params: { path: { appId: app.id } },
      ...bearer(admin),
    });
    expect(regenerated.response.status).toBe(200);
    const renewed: TestApp = { ...app, clientSecret: regenerated.data!.clientSecret };
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
      // Typed while the tokens are live; raw once each has ended, on purpose.
      const liveElsewhere = (token: string) => identityApi(other).GET("/oauth/userinfo", bearer(token));
      const elsewhere = (token: string) => request(other.url, "GET", "/oauth/userinfo", { token });
      for (const tokens of [revoked, ofDeletedUser, ofDisabledApp])
        expect((await liveElsewhere(tokens.access_token)).response.status).toBe(200);

      expect((await tokenRequest(t.url, { token: revoked.access_token, ...clientAuth(app) }, undefined, "/oauth/revoke")).status).toBe(200);
      expect((await elsewhere(revoked.access_token)).status).toBe(401);

      const dashboard = await adminTokenViaFlow(t, victim);
      expect((await api.DELETE("/api/users/me", bearer(dashboard))).response.status).toBe(204);
      expect((await elsewhere(ofDeletedUser.access_token)).status).toBe(401);
      expect(
        (await tokenRequest(other.url, { token: ofDeletedUser.access_token, ...clientAuth(app) }, undefined, "/oauth/introspect")).json,
      ).toEqual({ active: false });

      expect((await setEnabled(app, admin, false)).response.status).toBe(200);
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
    expect((await api.GET("/oauth/userinfo", bearer(tokens.access_token))).response.status).toBe(200);
    expect((await setEnabled(app, admin, false)).response.status).toBe(200);
    await expectEnded(tokens.access_token, witness);
    expect((await refresh(app, tokens.refresh_token)).status).toBe(401);
  });
});
