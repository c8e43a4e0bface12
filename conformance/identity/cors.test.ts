/**
 * X-ID-CORS-1, X-ID-CORS-2: browser pages of other origins. What a browser would send is sent
 * by hand (an `Origin` header, a preflight `OPTIONS` with `Access-Control-Request-*`), and the
 * answers' CORS headers are what a browser would act on. test/identity/cors-browser.test.ts
 * does the same in a real browser.
 */
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bearer, identityApi } from "../harness/api.ts";
import { request, type JsonResponse } from "../harness/http.ts";
import type { components } from "../../generated/sdk/types/identity.ts";
import { createApplication, registerUser, type Organization, createUser } from "../harness/identity-fixtures.ts";
import {
  adminTokenViaFlow,
  authorizeWithPassword,
  codeExchangeForm,
  DASHBOARD_CLIENT_ID,
  type OAuthClient,
} from "../harness/oauth-flow.ts";
import { identityTarget, type IdentityTarget } from "../harness/targets.ts";

const FORM = "application/x-www-form-urlencoded";

let t: IdentityTarget;
let org: Organization;
let admin = "";
/** A public single-page app whose origins come from its redirect URIs. */
let spa: { id: string; clientId: string; origin: string; redirectUri: string };
let user: { email: string; password: string };

/** A fresh https origin, so that each test decides which applications accept it. */
const freshOrigin = (label: string) => `https://${label}-${randomBytes(4).toString("hex")}.example`;

/** The CORS headers of an answer (absent ones as null), the way a browser reads them. */
const corsOf = (res: { headers: Headers }) => ({
  allowOrigin: res.headers.get("access-control-allow-origin"),
  allowMethods: res.headers.get("access-control-allow-methods"),
  allowHeaders: res.headers.get("access-control-allow-headers"),
  maxAge: res.headers.get("access-control-max-age"),
  exposeHeaders: res.headers.get("access-control-expose-headers"),
  allowCredentials: res.headers.get("access-control-allow-credentials"),
});
const NO_CORS = { allowOrigin: null, allowMethods: null, allowHeaders: null, maxAge: null, exposeHeaders: null, allowCredentials: null };

const preflight = (path: string, origin: string, method = "POST", headers = "content-type") =>
  request(t.url, "OPTIONS", path, {
    headers: { origin, "access-control-request-method": method, ...(headers ? { "access-control-request-headers": headers } : {}) },
  });

const post = (path: string, form: Record<string, string>, origin?: string, extra: Record<string, string> = {}) =>
  request(t.url, "POST", path, {
    headers: { "content-type": FORM, ...(origin ? { origin } : {}), ...extra },
    body: new URLSearchParams(form).toString(),
  });

/**
 * What a page of another origin sends goes raw, by hand (the Origin header and preflights are the
 * point); the admin's set-up and checks without an Origin go through the typed client.
 */
const adminApi = () => identityApi(t, { token: admin });
const patchApp = (appId: string, body: components["schemas"]["ApplicationUpdate"]) =>
  adminApi().PATCH("/api/applications/{appId}", { params: { path: { appId } }, body });

async function newApp(body: Record<string, unknown>) {
  const created = await createApplication(t, admin, { allowedScopes: ["openid", "profile", "email"], ...body });
  return created as { id: string; clientId: string; clientSecret?: string; redirectUris: string[]; allowedOrigins: string[] | null };
}

/**
 * The token request that exchanges a fresh code of `app` (PKCE S256), the user signed in through
 * the hosted page; sent from a page of an origin, or from the client's server (no Origin).
 */
async function freshCodeForm(app: OAuthClient) {
  const flow = await authorizeWithPassword(t.url, {
    clientId: app.clientId,
    redirectUri: app.redirectUri,
    email: user.email,
    password: user.password,
    scope: "openid email",
  });
  return codeExchangeForm(flow, app);
}

async function tokensFor(app: OAuthClient) {
  const res = await post("/oauth/token", await freshCodeForm(app));
  expect(res.status, res.text).toBe(200);
  return res.body as { access_token: string; refresh_token?: string };
}

const expectVaryOrigin = (res: JsonResponse) => expect(res.headers.get("vary") ?? "").toMatch(/\borigin\b/i);

beforeAll(async () => {
  t = await identityTarget();
  org = await t.createOrganization!();
  admin = await adminTokenViaFlow(t, org.admin);
  const origin = freshOrigin("spa");
  const created = await newApp({ clientType: "public", redirectUris: [`${origin}/callback`, `${origin}/silent-renew`] });
  spa = { id: created.id, clientId: created.clientId, origin, redirectUri: `${origin}/callback` };
  // On a deployment, a user of the run's pool (its registrations are limited per address).
  user = t.service ? await registerUser(t, spa.clientId) : await createUser(t);
});
afterAll(async () => t?.close());

describe("CORS: which endpoints answer other origins (X-ID-CORS-1)", () => {
  it("X-ID-CORS-1 discovery and the JWKS are readable by any origin: `*` on every answer, and preflights are 204 for GET", async () => {
    for (const path of ["/.well-known/openid-configuration", "/.well-known/oauth-authorization-server", "/.well-known/jwks.json"]) {
      const get = await request(t.url, "GET", path, { headers: { origin: freshOrigin("anyone") } });
      expect(get.status, path).toBe(200);
      expect(corsOf(get), path).toEqual({ ...NO_CORS, allowOrigin: "*" });
      const plain = await request(t.url, "GET", path);
      expect(plain.headers.get("access-control-allow-origin"), path).toBe("*");
      const pre = await preflight(path, freshOrigin("anyone"), "GET", "");
      expect(pre.status, path).toBe(204);
      expect(corsOf(pre), path).toEqual({ ...NO_CORS, allowOrigin: "*", allowMethods: "GET", maxAge: "3600" });
    }
  });

  it("X-ID-CORS-1 a preflight to token, revocation or userinfo from an origin an application accepts is 204 with that exact origin, the methods, the request headers, one hour, Vary: Origin", async () => {
    for (const [path, method, headers] of [
      ["/oauth/token", "POST", "Authorization, Content-Type, DPoP"],
      ["/oauth/revoke", "POST", "Authorization, Content-Type"],
      ["/oauth/userinfo", "GET", "Authorization, DPoP"],
    ] as const) {
      const res = await preflight(path, spa.origin, method, "authorization");
      expect(res.status, path).toBe(204);
      expect(corsOf(res), path).toEqual({
        ...NO_CORS,
        allowOrigin: spa.origin,
        allowMethods: method,
        allowHeaders: headers,
        maxAge: "3600",
      });
      expectVaryOrigin(res);
    }
  });

  it("X-ID-CORS-1 a preflight from an origin no application accepts (or Origin: null) is 403 origin_not_allowed, with no CORS header", async () => {
    for (const origin of [freshOrigin("unlisted"), "null", `${spa.origin}:8443`, spa.origin.replace("https:", "http:")]) {
      for (const path of ["/oauth/token", "/oauth/revoke", "/oauth/userinfo"]) {
        const res = await preflight(path, origin);
        expect(res.status, `${origin} ${path}`).toBe(403);
        expect(res.headers.get("content-type")).toMatch(/^application\/problem\+json/);
        expect(res.body).toMatchObject({ status: 403, code: "origin_not_allowed" });
        expect(corsOf(res), `${origin} ${path}`).toEqual(NO_CORS);
      }
    }
  });

  it("X-ID-CORS-1 the administration API, introspection, the hosted pages and the dashboard are same-origin only: a preflight is 405 and no answer carries a CORS header", async () => {
    for (const [path, method] of [
      ["/api/applications", "GET"],
      ["/api/applications", "POST"],
      [`/api/applications/${spa.id}`, "PATCH"],
      ["/api/users/me", "GET"],
      ["/oauth/introspect", "POST"],
      ["/oauth/authorize", "POST"],
      ["/dashboard", "GET"],
      ["/openapi.json", "GET"],
    ] as const) {
      const res = await preflight(path, spa.origin, method, "authorization, content-type");
      expect(res.status, path).toBe(405);
      expect(res.body).toMatchObject({ code: "method_not_allowed" });
      expect(res.headers.get("allow"), path).toContain(method);
      expect(corsOf(res), path).toEqual(NO_CORS);
    }
    const list = await request(t.url, "GET", "/api/applications", { token: admin, headers: { origin: spa.origin } });
    expect(list.status).toBe(200);
    expect(corsOf(list)).toEqual(NO_CORS);
    const introspect = await post("/oauth/introspect", { token: "x", client_id: spa.clientId }, spa.origin);
    expect(corsOf(introspect)).toEqual(NO_CORS);
  });

  it("X-ID-CORS-1 a request from the service's own origin is not cross-origin: the dashboard's code exchange gets no CORS header and is not refused", async () => {
    const redirectUri = `${t.url}/dashboard`;
    const flow = await authorizeWithPassword(t.url, {
      clientId: DASHBOARD_CLIENT_ID,
      redirectUri,
      email: org.admin.email,
      password: org.admin.password,
      scope: "openid",
    });
    const res = await post("/oauth/token", codeExchangeForm(flow, { clientId: DASHBOARD_CLIENT_ID, redirectUri }), t.url);
    expect(res.status, res.text).toBe(200);
    expect(corsOf(res)).toEqual(NO_CORS);
  });
});

describe("CORS: which pages may use an application (X-ID-CORS-2)", () => {
  it("X-ID-CORS-2 a public client's page on its redirect URIs' origin exchanges a code, refreshes, reads userinfo and revokes, each answer carrying its exact origin", async () => {
    const exchange = await post("/oauth/token", await freshCodeForm(spa), spa.origin);
    expect(exchange.status, exchange.text).toBe(200);
    expect(corsOf(exchange)).toEqual({ ...NO_CORS, allowOrigin: spa.origin, exposeHeaders: "WWW-Authenticate, DPoP-Nonce" });
    expectVaryOrigin(exchange);

    const info = await request(t.url, "GET", "/oauth/userinfo", { token: exchange.body.access_token, headers: { origin: spa.origin } });
    expect(info.status).toBe(200);
    expect(info.body.email).toBe(user.email);
    expect(corsOf(info)).toEqual({ ...NO_CORS, allowOrigin: spa.origin, exposeHeaders: "WWW-Authenticate, DPoP-Nonce" });

    const revoke = await post("/oauth/revoke", { token: exchange.body.access_token, client_id: spa.clientId }, spa.origin);
    expect(revoke.status).toBe(200);
    expect(revoke.headers.get("access-control-allow-origin")).toBe(spa.origin);

    // An error is readable by the page too: the revoked token at userinfo, with its challenge.
    const after = await request(t.url, "GET", "/oauth/userinfo", { token: exchange.body.access_token, headers: { origin: spa.origin } });
    expect(after.status).toBe(401);
    expect(after.headers.get("access-control-allow-origin")).toBe(spa.origin);
    expect(after.headers.get("access-control-expose-headers")).toBe("WWW-Authenticate, DPoP-Nonce");
  });

  it("X-ID-CORS-2 a token request from a page its client does not accept is 400 invalid_request with no CORS header, refused before the code is spent", async () => {
    // Another application accepts this origin, so the preflight passes; the request's own client does not.
    const other = freshOrigin("other");
    await newApp({ clientType: "public", redirectUris: [`${other}/callback`] });
    expect((await preflight("/oauth/token", other)).status).toBe(204);

    const form = await freshCodeForm(spa);
    const refused = await post("/oauth/token", form, other);
    expect(refused.status).toBe(400);
    expect(refused.body.error).toBe("invalid_request");
    expect(refused.body.error_description).toMatch(/origin/i);
    expect(corsOf(refused)).toEqual(NO_CORS);
    expectVaryOrigin(refused);
    // A simple request needs no preflight, so the same refusal holds for a page no application accepts.
    const unlisted = await post("/oauth/token", form, freshOrigin("unlisted"));
    expect(unlisted.status).toBe(400);
    expect(corsOf(unlisted)).toEqual(NO_CORS);
    // Nothing was done: the code still works for its own page.
    const ok = await post("/oauth/token", form, spa.origin);
    expect(ok.status, ok.text).toBe(200);

    // Revocation alike: the token stays live.
    const revoke = await post("/oauth/revoke", { token: ok.body.access_token, client_id: spa.clientId }, other);
    expect(revoke.status).toBe(400);
    expect(revoke.body.error).toBe("invalid_request");
    expect((await identityApi(t).GET("/oauth/userinfo", bearer(ok.body.access_token))).response.status).toBe(200);
  });

  it("X-ID-CORS-2 allowedOrigins replaces the redirect URIs' origins; [] lets no page in; null goes back to the redirect URIs' origins", async () => {
    const home = freshOrigin("home");
    const web = freshOrigin("web");
    const app = await newApp({ clientType: "public", redirectUris: [`${home}/callback`], allowedOrigins: [web] });
    expect(app.allowedOrigins).toEqual([web]);
    const client = { clientId: app.clientId, redirectUri: `${home}/callback` };
    expect((await preflight("/oauth/token", web)).status).toBe(204);
    expect((await preflight("/oauth/token", home)).status).toBe(403);
    let form = await freshCodeForm(client);
    expect((await post("/oauth/token", form, home)).status).toBe(400);
    const fromWeb = await post("/oauth/token", form, web);
    expect(fromWeb.status, fromWeb.text).toBe(200);
    expect(fromWeb.headers.get("access-control-allow-origin")).toBe(web);

    const none = await patchApp(app.id, { allowedOrigins: [] });
    expect(none.response.status).toBe(200);
    expect(none.data!.allowedOrigins).toEqual([]);
    expect((await preflight("/oauth/token", web)).status).toBe(403);
    form = await freshCodeForm(client);
    expect((await post("/oauth/token", form, web)).status).toBe(400);

    const derived = await patchApp(app.id, { allowedOrigins: null });
    expect(derived.response.status).toBe(200);
    expect(derived.data!.allowedOrigins).toBeNull();
    expect((await preflight("/oauth/token", home)).status).toBe(204);
    expect((await post("/oauth/token", form, home)).status).toBe(200);

    // Changing the redirect URIs moves the derived origins with them.
    const moved = freshOrigin("moved");
    expect((await patchApp(app.id, { redirectUris: [`${moved}/callback`] })).response.status).toBe(200);
    expect((await preflight("/oauth/token", moved)).status).toBe(204);
    expect((await preflight("/oauth/token", home)).status).toBe(403);
    const got = await adminApi().GET("/api/applications/{appId}", { params: { path: { appId: app.id } } });
    expect(got.data!.allowedOrigins).toBeNull();
  });

  it("X-ID-CORS-2 a confidential client is used from no page at token and revocation; its tokens are read at userinfo from its origins", async () => {
    const origin = freshOrigin("server-app");
    const app = await newApp({ clientType: "confidential", redirectUris: [`${origin}/callback`] });
    const client = { clientId: app.clientId, clientSecret: app.clientSecret!, redirectUri: `${origin}/callback` };
    // Only a confidential application accepts this origin: no token preflight, but a userinfo one.
    expect((await preflight("/oauth/token", origin)).status).toBe(403);
    expect((await preflight("/oauth/userinfo", origin, "GET", "authorization")).status).toBe(204);

    const form = await freshCodeForm(client);
    const refused = await post("/oauth/token", form, origin);
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({ error: "invalid_request" });
    expect(refused.body.error_description).toMatch(/confidential/);
    expect(corsOf(refused)).toEqual(NO_CORS);
    const server = await post("/oauth/token", form); // the same code from its server: not spent
    expect(server.status, server.text).toBe(200);

    const info = await request(t.url, "GET", "/oauth/userinfo", { token: server.body.access_token, headers: { origin } });
    expect(info.status).toBe(200);
    expect(info.headers.get("access-control-allow-origin")).toBe(origin);
  });

  it("X-ID-CORS-2 userinfo with another application's token is answered without Access-Control-Allow-Origin, so the page cannot read it", async () => {
    const other = freshOrigin("elsewhere");
    await newApp({ clientType: "public", redirectUris: [`${other}/callback`] });
    const { access_token } = await tokensFor(spa);
    const res = await request(t.url, "GET", "/oauth/userinfo", { token: access_token, headers: { origin: other } });
    expect(res.status).toBe(200);
    expect(res.headers.get("access-control-allow-origin")).toBeNull();
    expectVaryOrigin(res);
  });

  it("X-ID-CORS-2 a request naming no known client is answered under the preflight's rule: readable by accepted origins, not by others", async () => {
    const form = { grant_type: "authorization_code", code: "nope", redirect_uri: spa.redirectUri, client_id: "no-such-client" };
    const known = await post("/oauth/token", form, spa.origin);
    expect(known.status).toBe(401);
    expect(known.body.error).toBe("invalid_client");
    expect(known.headers.get("access-control-allow-origin")).toBe(spa.origin);
    const unlisted = await post("/oauth/token", form, freshOrigin("unlisted"));
    expect(unlisted.status).toBe(401);
    expect(unlisted.headers.get("access-control-allow-origin")).toBeNull();
    const noToken = await request(t.url, "GET", "/oauth/userinfo", { headers: { origin: spa.origin } });
    expect(noToken.status).toBe(401);
    expect(noToken.headers.get("access-control-allow-origin")).toBe(spa.origin);
    expect(noToken.headers.get("www-authenticate")).toMatch(/^Bearer/);
  });

  it("X-ID-CORS-2 a disabled application accepts no origin", async () => {
    const origin = freshOrigin("disabled");
    const app = await newApp({ clientType: "public", redirectUris: [`${origin}/callback`] });
    expect((await preflight("/oauth/token", origin)).status).toBe(204);
    expect((await patchApp(app.id, { enabled: false })).response.status).toBe(200);
    expect((await preflight("/oauth/token", origin)).status).toBe(403);
    expect((await preflight("/oauth/userinfo", origin, "GET", "authorization")).status).toBe(403);
  });

  it("X-ID-CORS-2 allowedOrigins takes origins only as browsers send them: anything else is 400 naming the field", async () => {
    const base = { clientType: "public", redirectUris: ["https://spa.example.com/callback"] } as const;
    // Origins the contract refuses (not as a browser sends them): raw.
    const bad = async (allowedOrigins: unknown) => {
      const res = await request(t.url, "POST", "/api/applications", {
        token: admin,
        json: { name: "Bad origins", ...base, allowedOrigins },
      });
      expect(res.status, JSON.stringify(allowedOrigins)).toBe(400);
      expect(res.body.code).toBe("validation_failed");
      return (res.body.errors as Array<{ field: string; message: string }>).map((e) => e.field);
    };
    for (const origin of [
      "https://App.example.com",
      "https://app.example.com/",
      "https://app.example.com/path",
      "http://app.example.com",
      "app.example.com",
      "*",
      "null",
    ]) {
      expect(await bad([origin]), origin).toContain("body.allowedOrigins[0]");
    }
    // Next to a good origin, only the bad one is named.
    for (const origin of ["https://app.example.com:443", "http://localhost:80", "https://[::ffff:1.2.3.4]"]) {
      const fields = await bad(["https://ok.example.com", origin]);
      expect(fields, origin).toEqual(["body.allowedOrigins[1]"]);
    }
    expect(await bad(["https://a.example.com", "https://a.example.com"])).toEqual(["body.allowedOrigins[1]"]);
    const ok = await adminApi().POST("/api/applications", {
      body: {
        name: "Good origins",
        ...base,
        redirectUris: [...base.redirectUris],
        allowedOrigins: [
          "https://app.example.com",
          "http://localhost:5173",
          "http://127.0.0.1:8080",
          "http://[::1]:3000",
          "https://xn--bcher-kva.example:8443",
        ],
      },
    });
    expect(ok.response.status, JSON.stringify(ok.error)).toBe(201);
    const plain = await adminApi().POST("/api/applications", {
      body: { name: "No origins given", ...base, redirectUris: [...base.redirectUris] },
    });
    expect(plain.data!.allowedOrigins).toBeNull();
  });
});
