/**
 * Resource indicators (RFC 8707) and API scopes on the authorization code flow: X-ID-RES-1..5.
 * An application registers the APIs it may ask tokens for (`resources`) and the scopes beyond the
 * OpenID four that mean something to them (`apiScopes`); the access tokens of a grant made for a
 * resource name it as `aud`, which a resource server checks (RFC 9068 §4, oauth4webapi below).
 */
import * as oauth from "oauth4webapi";
import { codeFlow, insecure } from "../harness/oauth4webapi-flow.ts";
import { randomBytes } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import { fileWorld, identityWorld } from "../harness/worlds.ts";
import { decodeJwt, request } from "../harness/http.ts";
import type { TestApp } from "../harness/identity-fixtures.ts";
import {
  authorizationPath,
  authorizeWithPassword,
  Browser,
  codeExchangeForm,
  exchangeCode,
  redirectParams,
  tokenRequest,
} from "../harness/oauth-flow.ts";

const world = fileWorld(() => identityWorld({ admin: true, user: true }));

const RESOURCE = "https://repository.example/api";
const OTHER_RESOURCE = "https://billing.example";
const API_SCOPE = "repository";

/** A confidential application that may ask tokens for RESOURCE and OTHER_RESOURCE, with API scope `repository`. */
let app: TestApp;

beforeAll(async () => {
  const redirectUri = `https://app-${randomBytes(3).toString("hex")}.example/callback`;
  const name = `Resource app ${randomBytes(3).toString("hex")}`;
  const created = await world.api().POST("/api/applications", {
    body: {
      name,
      clientType: "confidential",
      redirectUris: [redirectUri],
      allowedScopes: ["openid", "profile", "email", "offline_access"],
      resources: [RESOURCE, OTHER_RESOURCE],
      apiScopes: [API_SCOPE],
    },
  });
  expect(created.response.status).toBe(201);
  app = { id: created.data!.id, clientId: created.data!.clientId, clientSecret: created.data!.clientSecret!, redirectUri, name };
});

/** The authorization request's redirect, for parameters that fail before any sign-in. */
async function refusedAuthorization(scope: string, extra: Record<string, string> = {}) {
  const res = await new Browser(world.target.url).get(
    authorizationPath({ clientId: app.clientId, redirectUri: app.redirectUri, scope, state: "s-1", challenge: "c".repeat(43), extra }),
  );
  expect(res.status).toBe(302);
  const params = redirectParams(res.location);
  expect(params.get("state")).toBe("s-1");
  expect(params.get("iss")).toBe(world.target.url);
  return params;
}

/** The world's user signs in for `scope` (and `resource`, when given); the code exchanged as the client would. */
async function tokensFor(scope: string, resource?: string) {
  const flow = await authorizeWithPassword(world.target.url, {
    clientId: app.clientId,
    redirectUri: app.redirectUri,
    email: world.user.email,
    password: world.user.password,
    scope,
    ...(resource ? { extra: { resource } } : {}),
  });
  const res = await exchangeCode(world.target.url, flow, app);
  expect(res.status, res.text).toBe(200);
  return res.json as { access_token: string; refresh_token?: string; id_token?: string; scope: string };
}

const refresh = (token: string, extra: Record<string, string> = {}) =>
  tokenRequest(world.target.url, {
    grant_type: "refresh_token",
    refresh_token: token,
    client_id: app.clientId,
    client_secret: app.clientSecret!,
    ...extra,
  });

describe("resource indicators (RFC 8707)", () => {
  it("X-ID-RES-1 a resource that is not registered for the application, malformed, with a fragment or repeated is the invalid_target error redirect, with state and iss", async () => {
    for (const resource of ["https://elsewhere.example", "/relative", `${RESOURCE}#part`]) {
      const params = await refusedAuthorization("openid", { resource });
      expect(params.get("error"), resource).toBe("invalid_target");
    }
    const res = await new Browser(world.target.url).get(
      `${authorizationPath({ clientId: app.clientId, redirectUri: app.redirectUri, scope: "openid", state: "s-1", challenge: "c".repeat(43) })}&resource=${encodeURIComponent(RESOURCE)}&resource=${encodeURIComponent(OTHER_RESOURCE)}`,
    );
    expect(redirectParams(res.location).get("error")).toBe("invalid_target");
    // RFC 6749 §3.1: `resource=` (and `request_uri=`) without a value are as if omitted: the sign-in page.
    const empty = await new Browser(world.target.url).get(
      authorizationPath({
        clientId: app.clientId,
        redirectUri: app.redirectUri,
        scope: "openid",
        challenge: "c".repeat(43),
        extra: { resource: "", request_uri: "" },
      }),
    );
    expect(empty.status).toBe(200);
    expect(empty.text).toContain('name="request_id"');
    // Pushed (RFC 9126), the same checks answer in JSON.
    const pushed = await tokenRequest(
      world.target.url,
      {
        client_id: app.clientId,
        client_secret: app.clientSecret!,
        response_type: "code",
        redirect_uri: app.redirectUri,
        scope: "openid",
        code_challenge: "c".repeat(43),
        resource: "https://elsewhere.example",
      },
      undefined,
      "/oauth/par",
    );
    expect(pushed.status).toBe(400);
    expect(pushed.json.error).toBe("invalid_target");
  });

  it("X-ID-RES-2 an API scope needs a resource (invalid_scope without one), a scope no setting holds is unknown, and the sign-in page names the API", async () => {
    const without = await refusedAuthorization(`openid ${API_SCOPE}`);
    expect(without.get("error")).toBe("invalid_scope");
    expect(without.get("error_description")).toContain(API_SCOPE);
    const unknown = await refusedAuthorization("openid billing", { resource: RESOURCE });
    expect(unknown.get("error")).toBe("invalid_scope");

    const page = await new Browser(world.target.url).get(
      authorizationPath({
        clientId: app.clientId,
        redirectUri: app.redirectUri,
        scope: `openid ${API_SCOPE}`,
        challenge: "c".repeat(43),
        extra: { resource: RESOURCE },
      }),
    );
    expect(page.status).toBe(200);
    expect(page.text).toContain(`Use repository.example/api on your behalf (${API_SCOPE})`);
  });

  it("X-ID-RES-2 the admin API keeps apiScopes apart from the OpenID scopes: an OpenID scope or a duplicate is 400 naming the field; the list is shown and replaced", async () => {
    const openid = await request(world.target.url, "PATCH", `/api/applications/${app.id}`, {
      token: world.adminToken,
      json: { apiScopes: ["openid"] },
    });
    expect(openid.status).toBe(400);
    expect(JSON.stringify(openid.body)).toContain("body.apiScopes[0]");
    const twice = await request(world.target.url, "PATCH", `/api/applications/${app.id}`, {
      token: world.adminToken,
      json: { apiScopes: [API_SCOPE, API_SCOPE] },
    });
    expect(twice.status).toBe(400);
    expect(JSON.stringify(twice.body)).toContain("body.apiScopes[1]");
    const shown = await world.api().GET("/api/applications/{appId}", { params: { path: { appId: app.id } } });
    expect(shown.data!.apiScopes).toEqual([API_SCOPE]);
  });

  it("X-ID-RES-3 every access token of a grant made for a resource has it as aud (code exchange and refresh) with the API scope; the ID token's aud stays the client", async () => {
    const tokens = await tokensFor(`openid ${API_SCOPE} offline_access`, RESOURCE);
    expect(tokens.scope).toBe(`openid ${API_SCOPE} offline_access`);
    const access = decodeJwt(tokens.access_token).payload;
    expect(access.aud).toBe(RESOURCE);
    expect(access.client_id).toBe(app.clientId);
    expect(access.scope).toBe(`openid ${API_SCOPE} offline_access`);
    expect(decodeJwt(tokens.id_token!).payload.aud).toBe(app.clientId);

    const refreshed = await refresh(tokens.refresh_token!);
    expect(refreshed.status).toBe(200);
    expect(decodeJwt(refreshed.json.access_token).payload.aud).toBe(RESOURCE);
    // Without a resource the tokens are the application's own, as before.
    const own = await tokensFor("openid");
    expect(decodeJwt(own.access_token).payload.aud).toBe(app.clientId);
  });

  it("X-ID-RES-4 a resource sent to the token endpoint must be the grant's: another is invalid_target and the code stays usable; the grant's own is accepted on refresh", async () => {
    const flow = await authorizeWithPassword(world.target.url, {
      clientId: app.clientId,
      redirectUri: app.redirectUri,
      email: world.user.email,
      password: world.user.password,
      scope: `openid ${API_SCOPE} offline_access`,
      extra: { resource: RESOURCE },
    });
    const wrong = await tokenRequest(world.target.url, { ...codeExchangeForm(flow, app), resource: OTHER_RESOURCE });
    expect(wrong.status).toBe(400);
    expect(wrong.json.error).toBe("invalid_target");
    const right = await tokenRequest(world.target.url, { ...codeExchangeForm(flow, app), resource: RESOURCE });
    expect(right.status).toBe(200);

    const other = await refresh(right.json.refresh_token, { resource: OTHER_RESOURCE });
    expect(other.status).toBe(400);
    expect(other.json.error).toBe("invalid_target");
    const same = await refresh(right.json.refresh_token, { resource: RESOURCE });
    expect(same.status).toBe(200);

    // A grant made without a resource has none to name.
    const plain = await tokensFor("openid offline_access");
    const none = await refresh(plain.refresh_token!, { resource: RESOURCE });
    expect(none.status).toBe(400);
    expect(none.json.error).toBe("invalid_target");
  });

  it("X-ID-RES-5 a token made for a resource is refused at UserInfo (401 invalid_token), and introspection reports its aud", async () => {
    const tokens = await tokensFor(`openid ${API_SCOPE}`, RESOURCE);
    const info = await request(world.target.url, "GET", "/oauth/userinfo", { token: tokens.access_token });
    expect(info.status).toBe(401);
    expect(info.headers.get("www-authenticate")).toContain('error="invalid_token"');
    const own = await tokensFor("openid");
    expect((await request(world.target.url, "GET", "/oauth/userinfo", { token: own.access_token })).status).toBe(200);

    const introspected = await tokenRequest(
      world.target.url,
      { token: tokens.access_token, client_id: app.clientId, client_secret: app.clientSecret! },
      undefined,
      "/oauth/introspect",
    );
    expect(introspected.status).toBe(200);
    expect(introspected.json).toMatchObject({ active: true, aud: RESOURCE, scope: `openid ${API_SCOPE}` });
  });

  it("X-ID-RES-3 oauth4webapi: the code flow with resource, then the access token validated as a resource server does (RFC 9068, expected audience)", async () => {
    const { as, tokens } = await codeFlow(world.target.url, app, world.user, { scope: `openid ${API_SCOPE}`, resource: RESOURCE });
    const call = new Request(`${RESOURCE}/repositories`, { headers: { authorization: `Bearer ${tokens.access_token}` } });
    const claims = await oauth.validateJwtAccessToken(as, call, RESOURCE, insecure);
    expect(claims.aud).toBe(RESOURCE);
    expect(claims.scope).toBe(`openid ${API_SCOPE}`);
    await expect(oauth.validateJwtAccessToken(as, call, OTHER_RESOURCE, insecure)).rejects.toThrow();
  });
});
