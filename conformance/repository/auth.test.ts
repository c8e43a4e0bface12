/** RB-1…RB-4 and the token decisions of the repository-and-build service (X-RB-*). */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SignJWT, generateKeyPair } from "jose";
import { bearer, repositoryApi, type RepositoryApi } from "../harness/api.ts";
import { repositoryTarget, type RepositoryTarget } from "../harness/targets.ts";
import { decodeJwt, request } from "../harness/http.ts";
import { fetchFrom, freshLoopbackAddress } from "../harness/client-address.ts";
import { NEEDS, skipOnDeployment } from "../harness/skip.ts";

let rb: RepositoryTarget;
/** A typed client without a token; calls that need one name it (`bearer`). */
let api: RepositoryApi;
beforeAll(async () => {
  rb = await repositoryTarget();
  api = repositoryApi(rb);
});
afterAll(async () => rb?.close());

const login = (email: string, password: string, client: RepositoryApi = api) => client.POST("/auth/login", { body: { email, password } });
const refreshWith = (refreshToken: string) => api.POST("/auth/refresh", { body: { refreshToken } });

describe("login", () => {
  it("RB-1 POST /auth/login with email and password returns accessToken (JWT), refreshToken (JWT) and expiresAt (ISO 8601 UTC)", async () => {
    const res = await login(rb.user.email, rb.user.password);
    expect(res.response.status).toBe(200);
    expect(res.response.headers.get("content-type")).toMatch(/^application\/json/);
    const body = res.data!;
    expect(Object.keys(body).sort()).toEqual(["accessToken", "expiresAt", "refreshToken"]);
    for (const token of [body.accessToken, body.refreshToken]) {
      expect(token).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
      expect(decodeJwt(token).header.alg).toBe("EdDSA");
    }
    expect(body.expiresAt).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/);
  });

  it("X-RB-2 tokens carry iss, aud, sub, exp, iat and jti; expiresAt equals the access token's exp", async () => {
    const body = (await login(rb.user.email, rb.user.password)).data!;
    const access = decodeJwt(body.accessToken).payload;
    const refresh = decodeJwt(body.refreshToken).payload;
    for (const claims of [access, refresh]) {
      for (const claim of ["iss", "aud", "sub", "exp", "iat", "jti"]) expect(claims).toHaveProperty(claim);
    }
    expect(access.aud).toBe("repository-api");
    expect(refresh.aud).toBe("repository-refresh");
    expect(access.jti).not.toBe(refresh.jti);
    expect(Date.parse(body.expiresAt)).toBe(access.exp * 1000);
  });

  it("RB-2 wrong credentials are refused: a wrong password and an unknown email get the same 401", async () => {
    const wrong = await login(rb.user.email, `${rb.user.password}x`);
    const unknown = await login(`nobody-${Date.now()}@example.com`, "whatever-password");
    for (const res of [wrong, unknown]) {
      expect(res.response.status).toBe(401);
      expect(res.response.headers.get("content-type")).toMatch(/^application\/problem\+json/);
      expect(res.error).toMatchObject({ status: 401, code: "invalid_credentials" });
      expect(res.error).not.toHaveProperty("accessToken");
    }
    expect(wrong.error?.detail).toBe(unknown.error?.detail);
  });

  it("X-RB-6 after 10 failed logins for one account from one client address within 15 minutes, that address answers 429 with Retry-After, even with the right password; the owner elsewhere is not locked out", async (ctx) => {
    if (!rb.createUser || !rb.clock) return skipOnDeployment(ctx, `${NEEDS.ownUsers}; ${NEEDS.clock}; ${NEEDS.clientAddresses}`);
    const user = await rb.createUser();
    const guesser = fetchFrom(freshLoopbackAddress());
    const from = (f: typeof fetch, password: string) => login(user.email, password, repositoryApi(rb, { fetch: f }));
    for (let i = 0; i < 10; i++) expect((await from(guesser, "wrong-password")).response.status).toBe(401);
    const locked = await from(guesser, user.password);
    expect(locked.response.status).toBe(429);
    expect(locked.error?.code).toBe("rate_limited");
    const retryAfter = Number(locked.response.headers.get("retry-after"));
    expect(retryAfter).toBeGreaterThan(60);
    expect(retryAfter).toBeLessThanOrEqual(15 * 60);
    // The owner, from another address, is at most slowed down for a while (X-RB-9), never locked out for the window.
    rb.clock.advance(60_000);
    expect((await from(fetchFrom(freshLoopbackAddress()), user.password)).response.status).toBe(200);
    // The guesser's address stays refused until its window passes.
    const still = await from(guesser, user.password);
    expect(still.response.status).toBe(429);
    rb.clock.advance((Number(still.response.headers.get("retry-after")) + 1) * 1000);
    expect((await from(guesser, user.password)).response.status).toBe(200);
  });
});

describe("access token lifetime", () => {
  it("RB-3 an access token's claims say it expires 1 hour after issue (exp - iat = 3600)", async () => {
    const body = (await login(rb.user.email, rb.user.password)).data!;
    const { payload } = decodeJwt(body.accessToken);
    expect(payload.exp - payload.iat).toBe(3600);
  });

  it("RB-3 an access token expires 1 hour after issue: accepted at 59 minutes, refused with invalid_token after 60", async (ctx) => {
    if (!rb.clock) return skipOnDeployment(ctx, NEEDS.clock);
    const body = (await login(rb.user.email, rb.user.password)).data!;
    rb.clock.advance(59 * 60 * 1000);
    expect((await api.GET("/repository", bearer(body.accessToken))).response.status).toBe(200);
    rb.clock.advance(61 * 1000);
    // An expired token is a bad token: raw, on purpose.
    const expired = await request(rb.url, "GET", "/repository", { token: body.accessToken });
    expect(expired.status).toBe(401);
    expect(expired.headers.get("www-authenticate")).toMatch(/^Bearer .*error="invalid_token"/);
    expect(expired.body.detail).toMatch(/expired/);
  });
});

describe("refresh", () => {
  it("RB-4 POST /auth/refresh with refreshToken returns a new access token (the same token pair as login)", async () => {
    const first = (await login(rb.user.email, rb.user.password)).data!;
    rb.clock?.advance(2000);
    const res = await refreshWith(first.refreshToken);
    expect(res.response.status).toBe(200);
    const body = res.data!;
    expect(Object.keys(body).sort()).toEqual(["accessToken", "expiresAt", "refreshToken"]);
    expect(body.accessToken).not.toBe(first.accessToken);
    expect(body.refreshToken).not.toBe(first.refreshToken);
    expect((await api.GET("/auth/me", bearer(body.accessToken))).data?.email).toBe(rb.user.email);
  });

  it("RB-4 an access token, garbage, or a missing field is not a refresh token", async () => {
    const body = (await login(rb.user.email, rb.user.password)).data!;
    expect((await refreshWith(body.accessToken)).error?.code).toBe("invalid_refresh_token");
    expect((await refreshWith("garbage")).response.status).toBe(401);
    // A body without the required field: raw, on purpose.
    const missing = await request(rb.url, "POST", "/auth/refresh", { json: {} });
    expect(missing.status).toBe(400);
    expect(missing.body.errors).toContainEqual({ field: "body.refreshToken", message: "is required" });
  });

  it("X-RB-1 refresh tokens rotate: reusing a rotated token is refused and revokes its whole family", async () => {
    const first = (await login(rb.user.email, rb.user.password)).data!;
    const second = await refreshWith(first.refreshToken);
    expect(second.response.status).toBe(200);
    const reuse = await refreshWith(first.refreshToken);
    expect(reuse.response.status).toBe(401);
    expect(reuse.error?.code).toBe("invalid_refresh_token");
    // The legitimate holder's newer token died with the family.
    const after = await refreshWith(second.data!.refreshToken);
    expect(after.response.status).toBe(401);
  });

  it("X-RB-1 of concurrent refreshes with one token exactly one succeeds", async () => {
    const body = (await login(rb.user.email, rb.user.password)).data!;
    const results = await Promise.all(Array.from({ length: 8 }, () => refreshWith(body.refreshToken)));
    expect(results.filter((r) => r.response.status === 200)).toHaveLength(1);
    expect(results.filter((r) => r.response.status === 401)).toHaveLength(7);
  });

  it("X-RB-8 logout revokes the refresh token's family and is idempotent", async () => {
    const body = (await login(rb.user.email, rb.user.password)).data!;
    const logout = () => api.POST("/auth/logout", { body: { refreshToken: body.refreshToken } });
    expect((await logout()).response.status).toBe(204);
    expect((await logout()).response.status).toBe(204);
    expect((await refreshWith(body.refreshToken)).response.status).toBe(401);
  });

  it("X-RB-1 an expired refresh token is refused", async (ctx) => {
    if (!rb.clock) return skipOnDeployment(ctx, NEEDS.clock);
    const body = (await login(rb.user.email, rb.user.password)).data!;
    rb.clock.advance(31 * 24 * 3600 * 1000);
    expect((await refreshWith(body.refreshToken)).response.status).toBe(401);
  });
});

describe("forged tokens", () => {
  it("RB-5 a token signed with another key, an alg:none token and a token for another audience are refused", async () => {
    const body = (await login(rb.user.email, rb.user.password)).data!;
    const real = decodeJwt(body.accessToken).payload;
    const { privateKey } = await generateKeyPair("EdDSA");
    const forged = await new SignJWT(real).setProtectedHeader({ alg: "EdDSA" }).sign(privateKey);
    const none = `${Buffer.from(JSON.stringify({ alg: "none", typ: "JWT" })).toString("base64url")}.${Buffer.from(JSON.stringify(real)).toString("base64url")}.`;
    const swapped = body.accessToken.split(".").slice(0, 2).join(".") + "." + body.refreshToken.split(".")[2];
    // Bad tokens: raw requests, on purpose.
    for (const token of [forged, none, swapped, body.refreshToken]) {
      const res = await request(rb.url, "GET", "/repository", { token });
      expect(res.status, token).toBe(401);
      expect(res.headers.get("www-authenticate")).toMatch(/^Bearer realm="repository", error="invalid_token"/);
    }
  });

  it("X-RB-13 a token of another issuer, signed by another key, is 401 invalid_token saying it is not a token of this service and to sign in with POST /auth/login; a garbled token keeps the old detail", async () => {
    const body = (await login(rb.user.email, rb.user.password)).data!;
    const ours = decodeJwt(body.accessToken).payload;
    // What an identity service hands a page: another issuer, its own key and kid, an RS256 access token.
    const { privateKey } = await generateKeyPair("RS256");
    const issuer = "https://identity.example.com";
    const kid = "identity-key-2026-11";
    const foreign = await new SignJWT({ scope: "openid profile", client_id: "demo-spa" })
      .setProtectedHeader({ alg: "RS256", kid, typ: "at+jwt" })
      .setIssuer(issuer)
      .setAudience("repository-api")
      .setSubject(ours.sub)
      .setIssuedAt()
      .setExpirationTime("1h")
      .setJti("foreign-1")
      .sign(privateKey);
    // Another deployment of this service: its issuer, its own Ed25519 key and kid, our token's claims otherwise.
    const { privateKey: edKey } = await generateKeyPair("EdDSA");
    const otherDeployment = await new SignJWT({ ...ours, iss: "https://builds.other.example" })
      .setProtectedHeader({ alg: "EdDSA", kid: "other-deployment-key", typ: "JWT" })
      .sign(edKey);
    // Bad tokens: raw requests, on purpose.
    for (const token of [foreign, otherDeployment]) {
      const res = await request(rb.url, "GET", "/repository", { token });
      expect(res.status, token).toBe(401);
      expect(res.body).toMatchObject({ status: 401, code: "invalid_token" });
      expect(res.body.detail).toMatch(/not a user token of this service/);
      expect(res.body.detail).toMatch(/POST \/auth\/login/);
      expect(res.headers.get("www-authenticate")).toMatch(
        /^Bearer realm="repository", error="invalid_token", error_description="[^"]*POST \/auth\/login/,
      );
      // Nothing of the token comes back: the detail is the same whatever it claims.
      expect(res.text).not.toContain(kid);
      expect(res.text).not.toContain("example");
    }
    // Garbled: not a JWT at all, or one of ours with a signature that does not match (its kid is ours).
    const garbled = ["not-a-jwt", "a.b.c", body.accessToken.split(".").slice(0, 2).join(".") + "." + body.refreshToken.split(".")[2]];
    for (const token of garbled) {
      const res = await request(rb.url, "GET", "/repository", { token });
      expect(res.status, token).toBe(401);
      expect(res.body, token).toMatchObject({
        code: "invalid_token",
        detail: "The access token is malformed or its signature is invalid.",
      });
    }
  });
});
