/** Refresh tokens (ID-TOK-7, X-ID-TOK-2), revocation (RFC 7009) and introspection (RFC 7662). */
import { describe, expect, it } from "vitest";
import { fileWorld, identityWorld } from "../harness/worlds.ts";
import { decodeJwt, request } from "../harness/http.ts";
import { createApp, type TestApp } from "../harness/identity-fixtures.ts";
import { authorizeWithPassword, exchangeCode, tokenRequest } from "../harness/oauth-flow.ts";
import { NEEDS, skipOnDeployment } from "../harness/skip.ts";

const world = fileWorld(() => identityWorld({ apps: { app: {}, pub: { clientType: "public" } }, user: true }));

async function tokens(a: TestApp = world.app, scope = "openid profile email offline_access") {
  const f = await authorizeWithPassword(world.target.url, {
    clientId: a.clientId,
    redirectUri: a.redirectUri,
    email: world.user.email,
    password: world.user.password,
    scope,
  });
  const res = await exchangeCode(world.target.url, f, a);
  expect(res.status).toBe(200);
  return res.json as { access_token: string; refresh_token: string; scope: string; id_token?: string };
}

const refresh = (token: string, a: TestApp = world.app, extra: Record<string, string> = {}) =>
  tokenRequest(world.target.url, {
    grant_type: "refresh_token",
    refresh_token: token,
    client_id: a.clientId,
    ...(a.clientSecret ? { client_secret: a.clientSecret } : {}),
    ...extra,
  });

/** Userinfo with a live token, through the typed client. */
const liveUserinfoStatus = async (accessToken: string) => (await world.api(accessToken).GET("/oauth/userinfo")).response.status;
/** Userinfo with a token that must have ended (revoked, its family gone): raw, on purpose. */
const userinfoStatus = async (accessToken: string) =>
  (await request(world.target.url, "GET", "/oauth/userinfo", { token: accessToken })).status;
const auth = (a: TestApp) => ({ client_id: a.clientId, client_secret: a.clientSecret! });

describe("refresh grant", () => {
  it("ID-TOK-7 the refresh_token grant (grant_type, refresh_token, client_id) issues new tokens, with a rotated refresh token", async () => {
    const first = await tokens();
    const res = await refresh(first.refresh_token);
    expect(res.status).toBe(200);
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect(res.json.token_type).toBe("Bearer");
    expect(res.json.expires_in).toBe(3600);
    expect(res.json.scope).toBe("openid profile email offline_access");
    expect(res.json.access_token).not.toBe(first.access_token);
    expect(res.json.refresh_token).not.toBe(first.refresh_token);
    expect(decodeJwt(res.json.access_token).payload.sub).toBe(world.user.id);
    expect(typeof res.json.id_token).toBe("string");
    // A public client refreshes with its client_id alone.
    const p = await tokens(world.pub);
    expect((await refresh(p.refresh_token, world.pub)).status).toBe(200);
  });

  it("X-ID-TOK-2 a refresh token is bound to its client", async () => {
    const other = await createApp(world.target);
    const first = await tokens();
    const res = await refresh(first.refresh_token, other);
    expect(res.status).toBe(400);
    expect(res.json.error).toBe("invalid_grant");
    expect((await refresh(first.refresh_token)).status).toBe(200);
  });

  it("X-ID-TOK-2 reusing a rotated token after the grace window revokes the whole family (RFC 9700 §4.14.2)", async (ctx) => {
    if (!world.target.clock) return skipOnDeployment(ctx, NEEDS.clock);
    const first = await tokens();
    const second = (await refresh(first.refresh_token)).json;
    world.target.clock!.advance(31_000);
    const reuse = await refresh(first.refresh_token);
    expect(reuse.status).toBe(400);
    expect(reuse.json.error).toBe("invalid_grant");
    // The family is gone: the newest refresh token and the access tokens issued from it.
    expect((await refresh(second.refresh_token)).json.error).toBe("invalid_grant");
    expect(await userinfoStatus(second.access_token)).toBe(401);
    expect(await userinfoStatus(first.access_token)).toBe(401);
  });

  it("X-ID-TOK-2 within 30 seconds a retry of the immediately previous token gets the same new pair; concurrent refreshes all get it", async (ctx) => {
    if (!world.target.clock) return skipOnDeployment(ctx, NEEDS.clock);
    const first = await tokens();
    const results = await Promise.all(Array.from({ length: 6 }, () => refresh(first.refresh_token)));
    for (const r of results) expect(r.status).toBe(200);
    const pairs = new Set(results.map((r) => `${r.json.access_token} ${r.json.refresh_token}`));
    expect(pairs.size).toBe(1);
    world.target.clock!.advance(20_000);
    const retry = await refresh(first.refresh_token);
    expect(retry.json.refresh_token).toBe(results[0]!.json.refresh_token);
    // The new pair works and the family is intact.
    const next = await refresh(results[0]!.json.refresh_token);
    expect(next.status).toBe(200);
    // Once the successor has been used, the grandparent is no longer "the previous token": reuse revokes.
    const stale = await refresh(first.refresh_token);
    expect(stale.json.error).toBe("invalid_grant");
    expect((await refresh(next.json.refresh_token)).json.error).toBe("invalid_grant");
  });

  it("X-ID-TOK-2 a narrower scope on refresh is allowed, a wider one is invalid_scope", async () => {
    const first = await tokens(world.app, "openid email offline_access");
    const wider = await refresh(first.refresh_token, world.app, { scope: "openid email profile offline_access" });
    expect(wider.status).toBe(400);
    expect(wider.json.error).toBe("invalid_scope");
    const narrower = await refresh(first.refresh_token, world.app, { scope: "openid" });
    expect(narrower.status).toBe(200);
    expect(narrower.json.scope).toBe("openid");
    expect(decodeJwt(narrower.json.access_token).payload.scope).toBe("openid");
    // The refresh token keeps the grant's scope (RFC 6749 §6).
    const again = await refresh(narrower.json.refresh_token, world.app, { scope: "openid email" });
    expect(again.status).toBe(200);
    expect(again.json.scope).toBe("openid email");
  });

  it("X-ID-TOK-2 refresh tokens expire after 30 days", async (ctx) => {
    if (!world.target.clock) return skipOnDeployment(ctx, NEEDS.clock);
    const first = await tokens();
    world.target.clock!.advance(30 * 24 * 3600_000 + 1000);
    expect((await refresh(first.refresh_token)).json.error).toBe("invalid_grant");
  });

  it("X-ID-TOK-2 an unknown refresh token is invalid_grant", async () => {
    expect((await refresh("rt_not-a-token")).json.error).toBe("invalid_grant");
  });
});

describe("revocation (RFC 7009)", () => {
  it("X-ID-TOK-2 revoking a refresh token revokes its family and the access tokens issued from it", async () => {
    const first = await tokens();
    const res = await tokenRequest(
      world.target.url,
      { token: first.refresh_token, token_type_hint: "refresh_token", ...auth(world.app) },
      undefined,
      "/oauth/revoke",
    );
    expect(res.status).toBe(200);
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect((await refresh(first.refresh_token)).json.error).toBe("invalid_grant");
    expect(await userinfoStatus(first.access_token)).toBe(401);
  });

  it("X-ID-TOK-1 revoking an access token makes it fail at once, leaving the refresh token alive", async () => {
    const first = await tokens();
    expect(await liveUserinfoStatus(first.access_token)).toBe(200);
    const res = await tokenRequest(world.target.url, { token: first.access_token, ...auth(world.app) }, undefined, "/oauth/revoke");
    expect(res.status).toBe(200);
    expect(await userinfoStatus(first.access_token)).toBe(401);
    expect((await refresh(first.refresh_token)).status).toBe(200);
  });

  it("X-ID-TOK-3 revocation: unknown tokens are 200, another client's token is invalid_request and stays valid, an ID token is unsupported_token_type, a bad client 401", async () => {
    const first = await tokens();
    expect((await tokenRequest(world.target.url, { token: "whatever", ...auth(world.app) }, undefined, "/oauth/revoke")).status).toBe(200);
    const other = await createApp(world.target);
    const foreign = await tokenRequest(world.target.url, { token: first.refresh_token, ...auth(other) }, undefined, "/oauth/revoke");
    expect(foreign.status).toBe(400);
    expect(foreign.json.error).toBe("invalid_request");
    expect((await refresh(first.refresh_token)).status).toBe(200);
    const idToken = await tokenRequest(world.target.url, { token: first.id_token!, ...auth(world.app) }, undefined, "/oauth/revoke");
    expect(idToken.json.error).toBe("unsupported_token_type");
    const bad = await tokenRequest(
      world.target.url,
      { token: "x", client_id: world.app.clientId, client_secret: "cs_wrong" },
      undefined,
      "/oauth/revoke",
    );
    expect(bad.status).toBe(401);
    expect(bad.json.error).toBe("invalid_client");
  });
});

describe("introspection (RFC 7662)", () => {
  it("X-ID-TOK-1 an active access token is described; revoked, expired, foreign or unknown ones are {active:false}; public clients are refused", async (ctx) => {
    if (!world.target.clock) return skipOnDeployment(ctx, NEEDS.clock);
    const first = await tokens();
    const res = await tokenRequest(world.target.url, { token: first.access_token, ...auth(world.app) }, undefined, "/oauth/introspect");
    expect(res.status).toBe(200);
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect(res.json).toMatchObject({
      active: true,
      client_id: world.app.clientId,
      sub: world.user.id,
      username: world.user.email,
      token_type: "Bearer",
      iss: world.target.url,
      aud: world.app.clientId,
      scope: first.scope,
    });
    expect(res.json.exp - res.json.iat).toBe(3600);
    const rt = await tokenRequest(world.target.url, { token: first.refresh_token, ...auth(world.app) }, undefined, "/oauth/introspect");
    expect(rt.json).toMatchObject({ active: true, token_type: "refresh_token", sub: world.user.id });

    const other = await createApp(world.target);
    expect(
      (await tokenRequest(world.target.url, { token: first.access_token, ...auth(other) }, undefined, "/oauth/introspect")).json,
    ).toEqual({
      active: false,
    });
    expect((await tokenRequest(world.target.url, { token: "nope", ...auth(world.app) }, undefined, "/oauth/introspect")).json).toEqual({
      active: false,
    });
    const publicClient = await tokenRequest(
      world.target.url,
      { token: first.access_token, client_id: world.pub.clientId },
      undefined,
      "/oauth/introspect",
    );
    expect(publicClient.status).toBe(401);
    expect(publicClient.json.error).toBe("invalid_client");

    await tokenRequest(world.target.url, { token: first.access_token, ...auth(world.app) }, undefined, "/oauth/revoke");
    expect(
      (await tokenRequest(world.target.url, { token: first.access_token, ...auth(world.app) }, undefined, "/oauth/introspect")).json,
    ).toEqual({
      active: false,
    });
    const fresh = await tokens();
    world.target.clock!.advance(3601_000);
    expect(
      (await tokenRequest(world.target.url, { token: fresh.access_token, ...auth(world.app) }, undefined, "/oauth/introspect")).json,
    ).toEqual({
      active: false,
    });
  });
});
