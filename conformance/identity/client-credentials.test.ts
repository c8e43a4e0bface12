/**
 * Client credentials (RFC 6749 §4.4) and client authentication with private_key_jwt (RFC 7523):
 * X-ID-CC-1..7, black-box over HTTP, and the same flow run by an independent client (oauth4webapi).
 */
import { randomUUID } from "node:crypto";
import { createLocalJWKSet, exportJWK, generateKeyPair, type JWK, jwtVerify, SignJWT } from "jose";
import * as oauth from "oauth4webapi";
import { describe, expect, it } from "vitest";
import { basicAuth } from "../harness/oauth-flow.ts";
import { request } from "../harness/http.ts";
import { fileWorld, identityWorld } from "../harness/worlds.ts";

const world = fileWorld(() => identityWorld({ admin: true }));
const ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";
const RESOURCE = "https://api.example/reports";

type Created = { id: string; clientId: string; clientSecret?: string; [k: string]: unknown };

async function createApplication(body: Record<string, unknown>) {
  return request<Created & Record<string, any>>(world.target.url, "POST", "/api/applications", {
    token: world.adminToken,
    json: {
      name: `CC ${randomUUID().slice(0, 6)}`,
      clientType: "confidential",
      redirectUris: ["https://cc.example/callback"],
      clientCredentials: { enabled: true, scopes: ["reports:read", "reports:write"] },
      resources: [RESOURCE],
      ...body,
    },
  });
}

async function ccApp(body: Record<string, unknown> = {}): Promise<Created> {
  const res = await createApplication(body);
  expect(res.status, res.text).toBe(201);
  return res.body;
}

/** A fresh EC key pair, its public JWK registered under `kid`. */
async function keyPair(kid = randomUUID()) {
  const { privateKey, publicKey } = await generateKeyPair("ES256");
  const jwk: JWK = { ...(await exportJWK(publicKey)), kid, alg: "ES256", use: "sig" };
  return { privateKey, jwk, kid };
}

/** An application that authenticates with private_key_jwt, and what signs its assertions. */
async function jwtApp() {
  const key = await keyPair();
  const app = await ccApp({ tokenEndpointAuthMethod: "private_key_jwt", jwks: { keys: [key.jwk] } });
  return { app, key };
}

type Key = Awaited<ReturnType<typeof keyPair>>;
const nowSeconds = () => Math.floor(Date.now() / 1000);

async function assertion(clientId: string, key: Key, o: { aud?: string; exp?: number; jti?: string; kid?: string } = {}) {
  return new SignJWT({ jti: o.jti ?? randomUUID() })
    .setProtectedHeader({ alg: "ES256", kid: o.kid ?? key.kid })
    .setIssuer(clientId)
    .setSubject(clientId)
    .setAudience(o.aud ?? `${world.target.url}/oauth/token`)
    .setIssuedAt()
    .setExpirationTime(o.exp ?? nowSeconds() + 60)
    .sign(key.privateKey);
}

async function form(form: Record<string, string>, basic?: { clientId: string; secret: string }, path = "/oauth/token") {
  const headers: Record<string, string> = { "content-type": "application/x-www-form-urlencoded" };
  if (basic) headers.authorization = basicAuth(basic.clientId, basic.secret);
  return request(world.target.url, "POST", path, { headers, body: new URLSearchParams(form).toString() });
}

const withAssertion = async (clientId: string, key: Key, extra: Record<string, string> = {}, o = {}) => ({
  client_assertion_type: ASSERTION_TYPE,
  client_assertion: await assertion(clientId, key, o),
  ...extra,
});

const basicOf = (app: Created) => ({ clientId: app.clientId, secret: app.clientSecret! });

async function verifiedClaims(token: string) {
  const jwks = await request(world.target.url, "GET", "/.well-known/jwks.json");
  const { payload } = await jwtVerify(token, createLocalJWKSet(jwks.body), { issuer: world.target.url });
  return payload;
}

const expectOAuthError = (res: { status: number; body: any; headers: Headers }, error: string, status = 400) => {
  expect(res.status).toBe(status);
  expect(res.body.error).toBe(error);
  expect(typeof res.body.error_description).toBe("string");
  expect(res.headers.get("cache-control")).toBe("no-store");
};

describe("client credentials", () => {
  it("X-ID-CC-1 the grant needs a confidential application that enabled it: unauthorized_client otherwise", async () => {
    const off = await ccApp({ clientCredentials: { enabled: false, scopes: [] } });
    expectOAuthError(await form({ grant_type: "client_credentials" }, basicOf(off)), "unauthorized_client");
    const publicApp = await createApplication({ clientType: "public" });
    expect(publicApp.status).toBe(400);
    expect(JSON.stringify(publicApp.body.errors)).toContain("body.clientCredentials.enabled");
    const on = await ccApp();
    const ok = await form({ grant_type: "client_credentials" }, basicOf(on));
    expect(ok.status).toBe(200);
    expect(ok.headers.get("cache-control")).toBe("no-store");
  });

  it("X-ID-CC-2 scopes are a subset of clientCredentials.scopes (default all), with no refresh or ID token", async () => {
    const app = await ccApp();
    const all = await form({ grant_type: "client_credentials" }, basicOf(app));
    expect(all.body).toMatchObject({ token_type: "Bearer", expires_in: 3600, scope: "reports:read reports:write" });
    expect(all.body.refresh_token).toBeUndefined();
    expect(all.body.id_token).toBeUndefined();
    const one = await form({ grant_type: "client_credentials", scope: "reports:read" }, basicOf(app));
    expect(one.body.scope).toBe("reports:read");
    expect((await verifiedClaims(one.body.access_token)).scope).toBe("reports:read");
    expectOAuthError(await form({ grant_type: "client_credentials", scope: "reports:read admin" }, basicOf(app)), "invalid_scope");
    expectOAuthError(await form({ grant_type: "client_credentials", scope: "openid offline_access" }, basicOf(app)), "invalid_scope");
    const userScopes = await createApplication({ clientCredentials: { enabled: true, scopes: ["openid", "offline_access"] } });
    expect(userScopes.status).toBe(400);
  });

  it("X-ID-CC-3 resource is one of the application's resources and becomes aud; another is invalid_target", async () => {
    const app = await ccApp();
    const ok = await form({ grant_type: "client_credentials", resource: RESOURCE }, basicOf(app));
    expect(ok.status).toBe(200);
    expect((await verifiedClaims(ok.body.access_token)).aud).toBe(RESOURCE);
    const none = await form({ grant_type: "client_credentials" }, basicOf(app));
    expect((await verifiedClaims(none.body.access_token)).aud).toBe(app.clientId);
    expectOAuthError(
      await form({ grant_type: "client_credentials", resource: "https://other.example/api" }, basicOf(app)),
      "invalid_target",
    );
    expectOAuthError(await form({ grant_type: "client_credentials", resource: `${RESOURCE}#x` }, basicOf(app)), "invalid_target");
    const bad = await createApplication({ resources: ["not a uri"] });
    expect(bad.status).toBe(400);
  });

  it("X-ID-CC-4 the token's sub and client_id are the client id; userinfo refuses it", async () => {
    const app = await ccApp();
    const ok = await form({ grant_type: "client_credentials" }, basicOf(app));
    const claims = await verifiedClaims(ok.body.access_token);
    expect(claims.sub).toBe(app.clientId);
    expect(claims.client_id).toBe(app.clientId);
    const userinfo = await request(world.target.url, "GET", "/oauth/userinfo", { token: ok.body.access_token });
    expect(userinfo.status).toBe(401);
  });
});

describe("client authentication", () => {
  it("X-ID-CC-5 an application authenticates only with its tokenEndpointAuthMethod: another is invalid_client", async () => {
    const post = await ccApp({ tokenEndpointAuthMethod: "client_secret_post" });
    const viaBasic = await form({ grant_type: "client_credentials" }, basicOf(post));
    expectOAuthError(viaBasic, "invalid_client", 401);
    expect(viaBasic.headers.get("www-authenticate")).toMatch(/^Basic /);
    const viaPost = await form({ grant_type: "client_credentials", client_id: post.clientId, client_secret: post.clientSecret! });
    expect(viaPost.status).toBe(200);

    const { app, key } = await jwtApp();
    expectOAuthError(await form({ grant_type: "client_credentials" }, basicOf(app)), "invalid_client", 401);
    const secretJwt = await form(await withAssertion(post.clientId, key, { grant_type: "client_credentials" }));
    expectOAuthError(secretJwt, "invalid_client", 401);
    // The same method at revocation and introspection.
    const token = (await form(await withAssertion(app.clientId, key, { grant_type: "client_credentials" }))).body.access_token;
    const introspected = await form(await withAssertion(app.clientId, key, { token }), undefined, "/oauth/introspect");
    expect(introspected.status).toBe(200);
    expectOAuthError(await form({ token }, basicOf(app), "/oauth/introspect"), "invalid_client", 401);
    const revoked = await form(await withAssertion(app.clientId, key, { token }), undefined, "/oauth/revoke");
    expect(revoked.status).toBe(200);
    // Two methods at once is a malformed request.
    const both = await form(await withAssertion(app.clientId, key, { grant_type: "client_credentials" }), basicOf(app));
    expectOAuthError(both, "invalid_request");
  });

  it("X-ID-CC-6 keys are public jwks or an https jwksUri, never both; an unknown kid is invalid_client", async () => {
    const key = await keyPair();
    const { privateKey } = await generateKeyPair("ES256", { extractable: true });
    const secretJwk = { ...(await exportJWK(privateKey)), kid: "k" };
    expect((await createApplication({ tokenEndpointAuthMethod: "private_key_jwt", jwks: { keys: [secretJwk] } })).status).toBe(400);
    expect((await createApplication({ tokenEndpointAuthMethod: "private_key_jwt" })).status).toBe(400);
    const both = await createApplication({
      tokenEndpointAuthMethod: "private_key_jwt",
      jwks: { keys: [key.jwk] },
      jwksUri: "https://cc.example/jwks",
    });
    expect(both.status).toBe(400);
    expect((await createApplication({ tokenEndpointAuthMethod: "private_key_jwt", jwksUri: "http://cc.example/jwks" })).status).toBe(400);
    const byUri = await createApplication({ tokenEndpointAuthMethod: "private_key_jwt", jwksUri: "https://cc.example/jwks" });
    expect(byUri.status).toBe(201);
    expect(byUri.body).toMatchObject({ tokenEndpointAuthMethod: "private_key_jwt", jwks: null, jwksUri: "https://cc.example/jwks" });

    const { app, key: registered } = await jwtApp();
    const unknownKid = await form(
      await withAssertion(app.clientId, registered, { grant_type: "client_credentials" }, { kid: "no-such-kid" }),
    );
    expectOAuthError(unknownKid, "invalid_client", 401);
    const otherKey = await keyPair(registered.kid);
    expectOAuthError(await form(await withAssertion(app.clientId, otherKey, { grant_type: "client_credentials" })), "invalid_client", 401);
  });

  it("X-ID-CC-7 an assertion is refused when replayed, for another audience, expired or too long-lived", async () => {
    const { app, key } = await jwtApp();
    const grant = { grant_type: "client_credentials" };
    const once = await withAssertion(app.clientId, key, grant);
    expect((await form(once)).status).toBe(200);
    expectOAuthError(await form(once), "invalid_client", 401);
    expectOAuthError(
      await form(await withAssertion(app.clientId, key, grant, { aud: "https://other.example/token" })),
      "invalid_client",
      401,
    );
    expectOAuthError(await form(await withAssertion(app.clientId, key, grant, { exp: nowSeconds() - 120 })), "invalid_client", 401);
    expectOAuthError(await form(await withAssertion(app.clientId, key, grant, { exp: nowSeconds() + 3600 })), "invalid_client", 401);
    // The issuer is an accepted audience as well (RFC 7523 §3, OpenID Connect Core §9).
    expect((await form(await withAssertion(app.clientId, key, grant, { aud: world.target.url }))).status).toBe(200);
    const wrongType = { ...(await withAssertion(app.clientId, key, grant)), client_assertion_type: "urn:example:other" };
    expectOAuthError(await form(wrongType), "invalid_request");
  });

  it("X-ID-CC-7 of concurrent uses of one assertion exactly one wins", async () => {
    const { app, key } = await jwtApp();
    const one = await withAssertion(app.clientId, key, { grant_type: "client_credentials" });
    const answers = await Promise.all(Array.from({ length: 8 }, () => form(one)));
    expect(answers.filter((a) => a.status === 200)).toHaveLength(1);
    expect(answers.filter((a) => a.status === 401)).toHaveLength(7);
  });
});

describe("an independent client (oauth4webapi)", () => {
  const discover = async () => {
    const issuer = new URL(world.target.url);
    const res = await oauth.discoveryRequest(issuer, { algorithm: "oauth2", [oauth.allowInsecureRequests]: true });
    return oauth.processDiscoveryResponse(issuer, res);
  };

  it("X-ID-CC-7 clientCredentialsGrantRequest with PrivateKeyJwt and with ClientSecretBasic; the token's aud is the resource", async () => {
    const as = await discover();
    expect(as.grant_types_supported).toContain("client_credentials");
    expect(as.token_endpoint_auth_methods_supported).toContain("private_key_jwt");
    expect(as.token_endpoint_auth_signing_alg_values_supported).toEqual(["ES256", "RS256", "EdDSA"]);

    const { app, key } = await jwtApp();
    const jwtClient = { client_id: app.clientId };
    const signed = await oauth.clientCredentialsGrantRequest(
      as,
      jwtClient,
      oauth.PrivateKeyJwt({ key: key.privateKey, kid: key.kid }),
      new URLSearchParams({ scope: "reports:read", resource: RESOURCE }),
      { [oauth.allowInsecureRequests]: true },
    );
    const jwtAnswer = await oauth.processClientCredentialsResponse(as, jwtClient, signed);
    expect(jwtAnswer.scope).toBe("reports:read");
    expect((await verifiedClaims(jwtAnswer.access_token)).aud).toBe(RESOURCE);

    const secretApp = await ccApp({ tokenEndpointAuthMethod: "client_secret_basic" });
    const secretClient = { client_id: secretApp.clientId };
    const basic = await oauth.clientCredentialsGrantRequest(
      as,
      secretClient,
      oauth.ClientSecretBasic(secretApp.clientSecret!),
      new URLSearchParams({ resource: RESOURCE }),
      { [oauth.allowInsecureRequests]: true },
    );
    const basicAnswer = await oauth.processClientCredentialsResponse(as, secretClient, basic);
    expect(basicAnswer.refresh_token).toBeUndefined();
    const claims = await verifiedClaims(basicAnswer.access_token);
    expect(claims.aud).toBe(RESOURCE);
    expect(claims.sub).toBe(secretApp.clientId);
  });
});

describe("an independent client (oauth4webapi) at introspection and revocation", () => {
  it("X-ID-CC-9 introspectionRequest and revocationRequest with PrivateKeyJwt: active, then inactive after revocation", async () => {
    const issuer = new URL(world.target.url);
    const opts = { [oauth.allowInsecureRequests]: true } as const;
    const as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: "oauth2", ...opts }));
    const { app, key } = await jwtApp();
    const client = { client_id: app.clientId };
    const auth = () => oauth.PrivateKeyJwt({ key: key.privateKey, kid: key.kid });
    const granted = await oauth.processClientCredentialsResponse(
      as,
      client,
      await oauth.clientCredentialsGrantRequest(as, client, auth(), new URLSearchParams({ resource: RESOURCE }), opts),
    );
    const introspect = async () =>
      oauth.processIntrospectionResponse(as, client, await oauth.introspectionRequest(as, client, auth(), granted.access_token, opts));
    const active = await introspect();
    expect(active).toMatchObject({ active: true, sub: app.clientId, client_id: app.clientId, aud: RESOURCE, token_type: "Bearer" });
    expect(active.username).toBeUndefined();
    await oauth.processRevocationResponse(await oauth.revocationRequest(as, client, auth(), granted.access_token, opts));
    expect(await introspect()).toEqual({ active: false });
  });
});

describe("client-credentials tokens at introspection, revocation and the user APIs", () => {
  const tokenOf = async (app: Created, extra: Record<string, string> = {}) =>
    (await form({ grant_type: "client_credentials", ...extra }, basicOf(app))).body.access_token as string;
  const introspect = (app: Created, token: string) => form({ token }, basicOf(app), "/oauth/introspect");

  it("X-ID-CC-8 introspection answers active with sub = client_id = the client id, aud, scope, exp, iat and no username", async () => {
    const app = await ccApp();
    const token = await tokenOf(app, { scope: "reports:read", resource: RESOURCE });
    const claims = await verifiedClaims(token);
    const res = await introspect(app, token);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      active: true,
      sub: app.clientId,
      client_id: app.clientId,
      scope: "reports:read",
      aud: RESOURCE,
      exp: claims.exp,
      iat: claims.iat,
      iss: world.target.url,
      jti: claims.jti,
      token_type: "Bearer",
    });
    expect(res.body.username).toBeUndefined();
    // Without a resource the audience is the client itself (X-ID-CC-3).
    expect((await introspect(app, await tokenOf(app))).body).toMatchObject({ active: true, aud: app.clientId });
    // Another client learns nothing of it (RFC 7662 §2.2).
    expect((await introspect(await ccApp(), token)).body).toEqual({ active: false });
  });

  it("X-ID-CC-8 a token of a disabled or deleted application is inactive", async () => {
    const disabled = await ccApp();
    const token = await tokenOf(disabled);
    const patch = await request(world.target.url, "PATCH", `/api/applications/${disabled.id}`, {
      token: world.adminToken,
      json: { enabled: false },
    });
    expect(patch.status, patch.text).toBe(200);
    await request(world.target.url, "PATCH", `/api/applications/${disabled.id}`, { token: world.adminToken, json: { enabled: true } });
    // Enabled again, the token made before the disabling stays ended (X-ID-TOK-5).
    expect((await introspect(disabled, token)).body).toEqual({ active: false });

    const deleted = await ccApp();
    const other = await ccApp();
    const gone = await tokenOf(deleted);
    const del = await request(world.target.url, "DELETE", `/api/applications/${deleted.id}`, { token: world.adminToken });
    expect(del.status).toBe(204);
    // Its client can no longer ask, and the token is no longer live for anyone.
    expect((await introspect(other, gone)).body).toEqual({ active: false });
    const userinfo = await request(world.target.url, "GET", "/oauth/userinfo", { token: gone });
    expect(userinfo.status).toBe(401);
  });

  it("X-ID-CC-9 revoking a client-credentials token ends it: introspection then answers inactive", async () => {
    const app = await ccApp();
    const token = await tokenOf(app);
    const kept = await tokenOf(app);
    expect((await introspect(app, token)).body.active).toBe(true);
    const revoked = await form({ token }, basicOf(app), "/oauth/revoke");
    expect(revoked.status).toBe(200);
    expect((await introspect(app, token)).body).toEqual({ active: false });
    // Revoked alone: the application's other tokens stay live; revoking again is still 200.
    expect((await introspect(app, kept)).body.active).toBe(true);
    expect((await form({ token }, basicOf(app), "/oauth/revoke")).status).toBe(200);
  });

  it("X-ID-CC-4 the account and admin APIs refuse a client-credentials token: 401 invalid_token", async () => {
    const app = await ccApp();
    const token = await tokenOf(app);
    for (const [method, path] of [
      ["GET", "/api/users/me"],
      ["GET", "/api/applications"],
      ["GET", "/oauth/userinfo"],
    ] as const) {
      const res = await request(world.target.url, method, path, { token });
      expect(res.status, `${method} ${path}`).toBe(401);
      expect(res.headers.get("www-authenticate"), `${method} ${path}`).toContain('error="invalid_token"');
    }
  });
});
