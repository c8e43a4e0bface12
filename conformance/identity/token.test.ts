/** The token endpoint's authorization_code grant: ID-TOK-1…6, 8, 9, ID-CODE-1/2, X-ID-TOK-1/3/4, replay and downgrade rules. */
import { describe, expect, it } from "vitest";
import { fileWorld, identityWorld } from "../harness/worlds.ts";
import { createLocalJWKSet, jwtVerify } from "jose";
import { createHash } from "node:crypto";
import { request } from "../harness/http.ts";
import { createApp, type TestApp } from "../harness/identity-fixtures.ts";
import {
  authorizationPath,
  authorizeWithPassword,
  Browser,
  codeExchangeForm,
  exchangeCode,
  formFields,
  redirectParams,
  tokenRequest,
  type FlowResult,
  loginForm,
} from "../harness/oauth-flow.ts";
import { NEEDS, skipOnDeployment } from "../harness/skip.ts";

const world = fileWorld(() =>
  identityWorld({
    apps: { app: { name: "Confidential" }, pub: { name: "Public", clientType: "public" } },
    user: { firstName: "Ada", lastName: "Lovelace" },
  }),
);

const flow = (a: TestApp = world.app, scope = "openid profile email offline_access", extra: { nonce?: string } = {}) =>
  authorizeWithPassword(world.target.url, {
    clientId: a.clientId,
    redirectUri: a.redirectUri,
    email: world.user.email,
    password: world.user.password,
    scope,
    ...extra,
  });

const codeForm = (f: FlowResult, a: TestApp = world.app, over: Record<string, string> = {}) => ({ ...codeExchangeForm(f, a), ...over });

const expectTokenError = (res: { status: number; headers: Headers; json: any }, error: string, status = 400) => {
  expect(res.status).toBe(status);
  expect(res.headers.get("content-type")).toMatch(/^application\/json/);
  expect(res.json.error).toBe(error);
  expect(typeof res.json.error_description).toBe("string");
  expect(res.headers.get("cache-control")).toBe("no-store");
  expect(res.headers.get("pragma")).toBe("no-cache");
};

describe("exchanging a code", () => {
  it("ID-TOK-1 the token endpoint takes application/x-www-form-urlencoded; JSON is invalid_request in RFC 6749 form", async () => {
    const f = await flow();
    // JSON where the contract takes a form: raw.
    const json = await request(world.target.url, "POST", "/oauth/token", { json: codeForm(f) });
    expect(json.status).toBe(400);
    expect(json.body.error).toBe("invalid_request");
    expect(json.headers.get("cache-control")).toBe("no-store");
    const ok = await tokenRequest(world.target.url, codeForm(f));
    expect(ok.status).toBe(200);
  });

  it("ID-TOK-6 success returns JSON access_token, token_type Bearer, expires_in, scope, and refresh_token only with offline_access", async () => {
    const withOffline = await tokenRequest(world.target.url, codeForm(await flow()));
    expect(withOffline.status).toBe(200);
    expect(withOffline.headers.get("content-type")).toMatch(/^application\/json/);
    expect(withOffline.headers.get("cache-control")).toBe("no-store");
    expect(withOffline.headers.get("pragma")).toBe("no-cache");
    expect(withOffline.json.token_type).toBe("Bearer");
    expect(withOffline.json.expires_in).toBe(3600);
    expect(withOffline.json.scope).toBe("openid profile email offline_access");
    expect(withOffline.json.access_token).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);
    expect(typeof withOffline.json.refresh_token).toBe("string");
    const without = await tokenRequest(world.target.url, codeForm(await flow(world.app, "openid email")));
    expect(without.status).toBe(200);
    expect(without.json.scope).toBe("openid email");
    expect(without.json.refresh_token).toBeUndefined();
  });

  it("X-ID-TOK-1 the access token is an ES256 at+jwt verifiable with the JWKS, with iss, sub, aud, client_id, scope, iat, exp = iat + 3600, jti", async () => {
    const res = await tokenRequest(world.target.url, codeForm(await flow()));
    const jwks = createLocalJWKSet((await world.api().GET("/.well-known/jwks.json")).data!);
    const { payload, protectedHeader } = await jwtVerify(res.json.access_token, jwks, {
      issuer: world.target.url,
      audience: world.app.clientId,
      typ: "at+jwt",
      ...(world.target.clock ? { currentDate: world.target.clock.now() } : {}) /* a deployment: its real time */,
    });
    expect(protectedHeader.alg).toBe("ES256");
    expect(payload.sub).toBe(world.user.id);
    expect(payload.client_id).toBe(world.app.clientId);
    expect(payload.scope).toBe("openid profile email offline_access");
    expect(payload.exp! - payload.iat!).toBe(3600);
    expect(typeof payload.jti).toBe("string");
  });

  it("X-ID-TOK-4 with openid an ES256 ID token carries iss, sub, aud, exp, iat, auth_time, nonce, at_hash and the claims of the granted scopes", async () => {
    const res = await tokenRequest(world.target.url, codeForm(await flow(world.app, "openid profile email", { nonce: "n-0S6_WzA2Mj" })));
    const jwks = createLocalJWKSet((await world.api().GET("/.well-known/jwks.json")).data!);
    const { payload, protectedHeader } = await jwtVerify(res.json.id_token, jwks, {
      issuer: world.target.url,
      audience: world.app.clientId,
      ...(world.target.clock ? { currentDate: world.target.clock.now() } : {}) /* a deployment: its real time */,
    });
    expect(protectedHeader.alg).toBe("ES256");
    expect(payload.sub).toBe(world.user.id);
    expect(payload.nonce).toBe("n-0S6_WzA2Mj");
    expect(payload.exp! - payload.iat!).toBe(3600);
    expect(typeof payload.auth_time).toBe("number");
    const digest = createHash("sha256").update(res.json.access_token).digest();
    expect(payload.at_hash).toBe(digest.subarray(0, 16).toString("base64url"));
    expect(payload).toMatchObject({
      email: world.user.email,
      email_verified: false,
      name: "Ada Lovelace",
      given_name: "Ada",
      family_name: "Lovelace",
    });
    const noOpenid = await tokenRequest(world.target.url, codeForm(await flow(world.app, "email")));
    expect(noOpenid.json.id_token).toBeUndefined();
    const onlyOpenid = await tokenRequest(world.target.url, codeForm(await flow(world.app, "openid")));
    const claims = (
      await jwtVerify(onlyOpenid.json.id_token, jwks, {
        ...(world.target.clock ? { currentDate: world.target.clock.now() } : {}) /* a deployment: its real time */,
      })
    ).payload;
    expect(claims.email).toBeUndefined();
    expect(claims.name).toBeUndefined();
  });
});

describe("errors", () => {
  it("ID-TOK-2 a missing required parameter fails with invalid_request", async () => {
    const f = await flow();
    const full = codeForm(f);
    // client_id is client authentication (RFC 6749 §2.3): without it the request is 401 invalid_client (X-ID-TOK-3, below).
    for (const missing of ["grant_type", "code", "redirect_uri"]) {
      const form: Record<string, string> = { ...full };
      delete form[missing];
      expectTokenError(await tokenRequest(world.target.url, form), "invalid_request");
    }
    expectTokenError(
      await tokenRequest(world.target.url, {
        grant_type: "refresh_token",
        client_id: world.app.clientId,
        client_secret: world.app.clientSecret!,
      }),
      "invalid_request",
    );
    // A repeated parameter is invalid_request too (RFC 6749 §3.2).
    const body = new URLSearchParams(full);
    body.append("code", f.code);
    const res = await fetch(`${world.target.url}/oauth/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: body.toString(),
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toBe("invalid_request");
  });

  it("ID-TOK-3 redirect_uri must equal the one of the authorization request", async () => {
    const f = await flow();
    expectTokenError(
      await tokenRequest(world.target.url, codeForm(f, world.app, { redirect_uri: `${world.app.redirectUri}/other` })),
      "invalid_grant",
    );
    expect((await tokenRequest(world.target.url, codeForm(f))).status).toBe(200);
  });

  it("ID-TOK-4 unknown client_id or wrong client_secret fails with invalid_client (401); confidential clients must send the secret", async () => {
    const f = await flow();
    expectTokenError(await tokenRequest(world.target.url, codeForm(f, world.app, { client_id: "no-such-client" })), "invalid_client", 401);
    expectTokenError(await tokenRequest(world.target.url, codeForm(f, world.app, { client_secret: "cs_wrong" })), "invalid_client", 401);
    const noSecret: Record<string, string> = codeForm(f);
    delete noSecret.client_secret;
    expectTokenError(await tokenRequest(world.target.url, noSecret), "invalid_client", 401);
    expect((await tokenRequest(world.target.url, codeForm(f))).status).toBe(200);
  });

  it("X-ID-TOK-3 client_secret_basic works; a failed Basic authentication is 401 with WWW-Authenticate: Basic; Basic and a body secret together are invalid_request", async () => {
    const f = await flow();
    const form: Record<string, string> = codeForm(f);
    delete form.client_secret;
    const wrong = await tokenRequest(world.target.url, form, { clientId: world.app.clientId, secret: "cs_wrong" });
    expectTokenError(wrong, "invalid_client", 401);
    expect(wrong.headers.get("www-authenticate")).toMatch(/^Basic realm="/);
    const post = await tokenRequest(world.target.url, codeForm(f, world.app, { client_secret: "cs_wrong" }));
    expect(post.headers.get("www-authenticate")).toBeNull();
    expectTokenError(
      await tokenRequest(world.target.url, codeForm(f), { clientId: world.app.clientId, secret: world.app.clientSecret! }),
      "invalid_request",
    );
    const ok = await tokenRequest(world.target.url, form, { clientId: world.app.clientId, secret: world.app.clientSecret! });
    expect(ok.status).toBe(200);
  });

  it("X-ID-TOK-3 no client authentication at all (no HTTP Basic, no client_id) is 401 invalid_client at the token, revocation and introspection endpoints (RFC 6749 §5.2, RFC 7009 §2.2.1, RFC 7662 §2.3)", async () => {
    const f = await flow();
    const { client_id: _id, client_secret: _secret, ...anonymous } = codeForm(f);
    const forms: Array<[string, Record<string, string>]> = [
      ["/oauth/token", anonymous],
      ["/oauth/token", { grant_type: "refresh_token", refresh_token: "rt_whatever" }],
      ["/oauth/token", { ...anonymous, client_secret: world.app.clientSecret! }], // a secret without saying whose
      ["/oauth/revoke", { token: "rt_whatever" }],
      ["/oauth/introspect", { token: "rt_whatever" }],
    ];
    for (const [path, form] of forms) {
      const res = await tokenRequest(world.target.url, form, undefined, path);
      expectTokenError(res, "invalid_client", 401);
      // No HTTP Basic was tried, so no Basic challenge (RFC 6749 §5.2 asks for one only then).
      expect(res.headers.get("www-authenticate")).toBeNull();
    }
    // Another scheme than Basic is no client authentication either.
    const bearer = await fetch(`${world.target.url}/oauth/introspect`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", authorization: "Bearer abc" },
      body: new URLSearchParams({ token: "rt_whatever" }).toString(),
    });
    expect(bearer.status).toBe(401);
    expect(((await bearer.json()) as { error: string }).error).toBe("invalid_client");
    // The code was not used up by any of this.
    expect((await tokenRequest(world.target.url, codeForm(f))).status).toBe(200);
  });

  it("ID-TOK-8 an unsupported grant_type fails with unsupported_grant_type", async () => {
    // client_credentials is served since X-ID-CC-1; the JWT bearer grant (RFC 7523 §2.1) is not.
    for (const grant of ["password", "urn:ietf:params:oauth:grant-type:jwt-bearer", "implicit"]) {
      expectTokenError(
        await tokenRequest(world.target.url, {
          grant_type: grant,
          client_id: world.app.clientId,
          client_secret: world.app.clientSecret!,
          username: "a",
          password: "b",
        }),
        "unsupported_grant_type",
      );
    }
  });

  it("ID-TOK-9 token errors are JSON with error and error_description, never a problem document", async () => {
    const f = await flow();
    for (const res of [
      await tokenRequest(world.target.url, codeForm(f, world.app, { code: "not-a-code" })),
      await tokenRequest(world.target.url, { grant_type: "authorization_code" }),
      await tokenRequest(world.target.url, { grant_type: "nope" }),
      await tokenRequest(world.target.url, codeForm(f, world.app, { client_secret: "cs_wrong" })),
    ]) {
      expect(res.headers.get("content-type")).toMatch(/^application\/json/);
      expect(Object.keys(res.json).sort()).toEqual(["error", "error_description"]);
    }
  });

  it("X-ID-TOK-3 a code issued to another client is invalid_grant, and cannot be used by that client afterwards either", async () => {
    const other = await createApp(world.target, { redirectUris: [world.app.redirectUri] });
    const f = await flow();
    expectTokenError(await tokenRequest(world.target.url, codeForm(f, other)), "invalid_grant");
    expect((await tokenRequest(world.target.url, codeForm(f))).status).toBe(200);
  });
});

describe("codes", () => {
  it("ID-CODE-1 a code expires 10 minutes after issue; exchanging it later fails with invalid_grant", async (ctx) => {
    if (!world.target.clock) return skipOnDeployment(ctx, NEEDS.clock);
    const early = await flow();
    world.target.clock!.advance(9 * 60_000 + 50_000);
    expect((await tokenRequest(world.target.url, codeForm(early))).status).toBe(200);
    const late = await flow();
    world.target.clock!.advance(10 * 60_000 + 1000);
    expectTokenError(await tokenRequest(world.target.url, codeForm(late)), "invalid_grant");
  });

  it("ID-CODE-2 a code can be exchanged exactly once; a second exchange fails with invalid_grant", async () => {
    const f = await flow();
    expect((await tokenRequest(world.target.url, codeForm(f))).status).toBe(200);
    expectTokenError(await tokenRequest(world.target.url, codeForm(f)), "invalid_grant");
  });

  it("ID-CODE-2 of many concurrent exchanges of one code exactly one succeeds", async () => {
    for (let round = 0; round < 3; round++) {
      const f = await flow();
      const results = await Promise.all(Array.from({ length: 12 }, () => tokenRequest(world.target.url, codeForm(f))));
      expect(results.filter((r) => r.status === 200)).toHaveLength(1);
      for (const r of results.filter((r) => r.status !== 200)) expect(r.json.error).toBe("invalid_grant");
    }
  });

  it("ID-CODE-2 a replayed code fails and revokes the tokens issued from it (access and refresh)", async () => {
    const f = await flow();
    const first = await tokenRequest(world.target.url, codeForm(f));
    expect((await world.api(first.json.access_token).GET("/oauth/userinfo")).response.status).toBe(200);
    expectTokenError(await tokenRequest(world.target.url, codeForm(f)), "invalid_grant");
    // Revoked by the replay: raw, on purpose.
    const userinfo = await request(world.target.url, "GET", "/oauth/userinfo", { token: first.json.access_token });
    expect(userinfo.status).toBe(401);
    expect(userinfo.headers.get("www-authenticate")).toContain('error="invalid_token"');
    const refresh = await tokenRequest(world.target.url, {
      grant_type: "refresh_token",
      refresh_token: first.json.refresh_token,
      client_id: world.app.clientId,
      client_secret: world.app.clientSecret!,
    });
    expectTokenError(refresh, "invalid_grant");
  });
});

describe("PKCE at the token endpoint", () => {
  it("ID-TOK-5 code_verifier is required whenever PKCE was used, and a wrong one fails with invalid_grant", async () => {
    const f = await flow();
    const noVerifier: Record<string, string> = codeForm(f);
    delete noVerifier.code_verifier;
    expectTokenError(await tokenRequest(world.target.url, noVerifier), "invalid_grant");
    expectTokenError(await tokenRequest(world.target.url, codeForm(f, world.app, { code_verifier: "x".repeat(43) })), "invalid_grant");
    expect((await tokenRequest(world.target.url, codeForm(f))).status).toBe(200);
  });

  it("ID-TOK-5 a public client authenticates with client_id and the verifier alone", async () => {
    const f = await flow(world.pub);
    const noVerifier: Record<string, string> = codeForm(f, world.pub);
    delete noVerifier.code_verifier;
    expectTokenError(await tokenRequest(world.target.url, noVerifier), "invalid_grant");
    const res = await exchangeCode(world.target.url, f, world.pub);
    expect(res.status).toBe(200);
  });

  it("X-ID-TOK-3 PKCE downgrade: a verifier sent for a code issued without a challenge is refused", async () => {
    // A confidential client may skip PKCE at the authorization endpoint.
    const b = new Browser(world.target.url);
    const page = await b.get(authorizationPath({ clientId: world.app.clientId, redirectUri: world.app.redirectUri, scope: "openid" }));
    const fields = formFields(page.text);
    const done = await b.post("/oauth/authorize", loginForm(fields, world.user));
    const code = redirectParams(done.location).get("code")!;
    const base = {
      grant_type: "authorization_code",
      code,
      redirect_uri: world.app.redirectUri,
      client_id: world.app.clientId,
      client_secret: world.app.clientSecret!,
    };
    expectTokenError(await tokenRequest(world.target.url, { ...base, code_verifier: "a".repeat(43) }), "invalid_grant");
    expect((await tokenRequest(world.target.url, base)).status).toBe(200);
  });
});
