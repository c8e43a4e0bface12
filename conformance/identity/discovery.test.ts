/** Discovery (RFC 8414, OpenID Connect Discovery), JWKS, and UserInfo claims by scope (ID-SCOPE-1). */
import { describe, expect, it } from "vitest";
import { fileWorld, identityWorld } from "../harness/worlds.ts";
import { request } from "../harness/http.ts";
import { authorizeWithPassword, exchangeCode } from "../harness/oauth-flow.ts";
import { NEEDS, skipOnDeployment } from "../harness/skip.ts";

const world = fileWorld(() => identityWorld({ apps: { app: {} }, user: { firstName: "Katherine", lastName: "Johnson" } }));

async function tokens(scope: string) {
  const f = await authorizeWithPassword(world.target.url, {
    clientId: world.app.clientId,
    redirectUri: world.app.redirectUri,
    email: world.user.email,
    password: world.user.password,
    scope,
  });
  return (await exchangeCode(world.target.url, f, world.app)).json;
}

describe("discovery", () => {
  it("X-ID-TOK-1 /.well-known/oauth-authorization-server is RFC 8414 metadata with authorization_response_iss_parameter_supported", async () => {
    const res = await world.api().GET("/.well-known/oauth-authorization-server");
    expect(res.response.status).toBe(200);
    expect(res.response.headers.get("cache-control")).toBe("public, max-age=300");
    expect(res.data).toMatchObject({
      issuer: world.target.url,
      authorization_endpoint: `${world.target.url}/oauth/authorize`,
      token_endpoint: `${world.target.url}/oauth/token`,
      jwks_uri: `${world.target.url}/.well-known/jwks.json`,
      revocation_endpoint: `${world.target.url}/oauth/revoke`,
      introspection_endpoint: `${world.target.url}/oauth/introspect`,
      response_types_supported: ["code"],
      grant_types_supported: ["authorization_code", "refresh_token", "urn:ietf:params:oauth:grant-type:device_code", "client_credentials"],
      code_challenge_methods_supported: ["S256", "plain"],
      authorization_response_iss_parameter_supported: true,
    });
    expect(res.data!.scopes_supported).toEqual(["openid", "profile", "email", "offline_access"]);
    expect(res.data!.token_endpoint_auth_methods_supported).toEqual([
      "client_secret_basic",
      "client_secret_post",
      "private_key_jwt",
      "none",
    ]);
    // X-ID-CC-6: the algorithms a private_key_jwt assertion may use, exactly.
    expect(res.data!.token_endpoint_auth_signing_alg_values_supported).toEqual(["ES256", "RS256", "EdDSA"]);
  });

  it("X-ID-TOK-4 /.well-known/openid-configuration adds userinfo, subject types and ES256", async () => {
    const res = await world.api().GET("/.well-known/openid-configuration");
    expect(res.response.status).toBe(200);
    expect(res.data).toMatchObject({
      issuer: world.target.url,
      userinfo_endpoint: `${world.target.url}/oauth/userinfo`,
      subject_types_supported: ["public"],
      id_token_signing_alg_values_supported: ["ES256"],
    });
  });

  it("X-ID-DISC-1 both discovery documents are the same document, OpenID fields included: a client discovering through RFC 8414 learns ES256 and the userinfo endpoint", async () => {
    const rfc8414 = await world.api().GET("/.well-known/oauth-authorization-server");
    const oidc = await world.api().GET("/.well-known/openid-configuration");
    expect(rfc8414.data!.scopes_supported).toContain("openid");
    expect(rfc8414.data).toEqual(oidc.data);
    expect(rfc8414.data).toMatchObject({
      userinfo_endpoint: `${world.target.url}/oauth/userinfo`,
      id_token_signing_alg_values_supported: ["ES256"],
      subject_types_supported: ["public"],
    });
    expect(rfc8414.data!.claims_supported).toEqual(expect.arrayContaining(["sub", "at_hash", "email", "email_verified", "name"]));
    // What it announces is what ID tokens use.
    const idToken = (await tokens("openid")).id_token as string;
    expect(JSON.parse(Buffer.from(idToken.split(".")[0]!, "base64url").toString()).alg).toBe(
      rfc8414.data!.id_token_signing_alg_values_supported[0],
    );
  });

  it("X-ID-TOK-1 the JWKS publishes the ES256 public key (no private members) that tokens name by kid", async () => {
    const res = await world.api().GET("/.well-known/jwks.json");
    expect(res.response.status).toBe(200);
    const key = res.data!.keys[0]!;
    expect(key).toMatchObject({ kty: "EC", crv: "P-256", alg: "ES256", use: "sig" });
    expect((key as Record<string, unknown>).d).toBeUndefined();
    const token = (await tokens("openid")).access_token as string;
    expect(JSON.parse(Buffer.from(token.split(".")[0]!, "base64url").toString()).kid).toBe(key.kid);
  });
});

describe("userinfo", () => {
  it("ID-SCOPE-1 openid gives the user's identifier, profile the profile, email the email address", async () => {
    const openid = await world.api((await tokens("openid")).access_token).GET("/oauth/userinfo");
    expect(openid.response.status).toBe(200);
    expect(openid.response.headers.get("cache-control")).toBe("no-store");
    expect(openid.data).toEqual({ sub: world.user.id });
    const profile = await world.api((await tokens("openid profile")).access_token).GET("/oauth/userinfo");
    expect(profile.data).toMatchObject({ sub: world.user.id, name: "Katherine Johnson", given_name: "Katherine", family_name: "Johnson" });
    expect(profile.data!.email).toBeUndefined();
    const email = await world.api((await tokens("openid email")).access_token).GET("/oauth/userinfo");
    expect(email.data).toEqual({ sub: world.user.id, email: world.user.email, email_verified: false });
  });

  it("ID-SCOPE-1 offline_access gives refresh tokens, and only it", async () => {
    expect((await tokens("openid offline_access")).refresh_token).toBeTruthy();
    expect((await tokens("openid")).refresh_token).toBeUndefined();
  });

  it("ID-SCOPE-1 without openid userinfo is 403 insufficient_scope; a bad or expired token is 401 invalid_token (RFC 6750)", async (ctx) => {
    if (!world.target.clock) return skipOnDeployment(ctx, NEEDS.clock);
    const noOpenid = await world.api((await tokens("email")).access_token).GET("/oauth/userinfo");
    expect(noOpenid.response.status).toBe(403);
    expect(noOpenid.response.headers.get("www-authenticate")).toContain('error="insufficient_scope"');
    // No token, a forged one, an expired one: raw, on purpose.
    const none = await request(world.target.url, "GET", "/oauth/userinfo");
    expect(none.status).toBe(401);
    expect(none.headers.get("www-authenticate")).toMatch(/^Bearer realm=/);
    const forged = await request(world.target.url, "GET", "/oauth/userinfo", { token: "eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0." });
    expect(forged.status).toBe(401);
    const token = (await tokens("openid")).access_token;
    world.target.clock!.advance(3601_000);
    const expired = await request(world.target.url, "GET", "/oauth/userinfo", { token });
    expect(expired.status).toBe(401);
    expect(expired.headers.get("www-authenticate")).toContain('error="invalid_token"');
  });
});
