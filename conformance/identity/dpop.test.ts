/** DPoP (RFC 9449): proofs, replay, token binding, refresh binding, presentation, discovery (X-ID-DPOP-1..7). */
import { createHash, randomUUID } from "node:crypto";
import { exportJWK, generateKeyPair, SignJWT, type JWK } from "jose";
import * as oauth from "oauth4webapi";
import { describe, expect, it } from "vitest";
import { fileWorld, identityWorld } from "../harness/worlds.ts";
import { decodeJwt, request } from "../harness/http.ts";
import type { TestApp } from "../harness/identity-fixtures.ts";
import { authorizeWithPassword, codeExchangeForm, DASHBOARD_CLIENT_ID, type HttpResult } from "../harness/oauth-flow.ts";
import { readBody } from "../harness/http.ts";
import { NEEDS, skipOnDeployment } from "../harness/skip.ts";

const world = fileWorld(() => identityWorld({ apps: { app: {}, pub: { clientType: "public" } }, user: true, admin: true }));

type Alg = "ES256" | "EdDSA" | "RS256";
interface Holder {
  alg: Alg;
  privateKey: Awaited<ReturnType<typeof generateKeyPair>>["privateKey"];
  jwk: JWK;
}

async function holder(alg: Alg = "ES256"): Promise<Holder> {
  const { privateKey, publicKey } = await generateKeyPair(alg, alg === "EdDSA" ? { crv: "Ed25519" } : {});
  return { alg, privateKey, jwk: await exportJWK(publicKey) };
}

/** Seconds on the server's clock (the injected one in process, the wall clock on a deployment). */
const serverSeconds = () => Math.floor((world.target.clock?.now().getTime() ?? Date.now()) / 1000);

async function proof(
  h: Holder,
  htm: string,
  htu: string,
  o: { accessToken?: string; iat?: number; jti?: string; typ?: string; jwk?: JWK } = {},
): Promise<string> {
  const claims: Record<string, unknown> = { htm, htu, jti: o.jti ?? randomUUID(), iat: o.iat ?? serverSeconds() };
  if (o.accessToken) claims.ath = createHash("sha256").update(o.accessToken).digest("base64url");
  return new SignJWT(claims).setProtectedHeader({ alg: h.alg, typ: o.typ ?? "dpop+jwt", jwk: o.jwk ?? h.jwk }).sign(h.privateKey);
}

const tokenUrl = () => `${world.target.url}/oauth/token`;
const userinfoUrl = () => `${world.target.url}/oauth/userinfo`;

async function postToken(form: Record<string, string>, dpop?: string): Promise<HttpResult> {
  const headers: Record<string, string> = { "content-type": "application/x-www-form-urlencoded" };
  if (dpop !== undefined) headers.dpop = dpop;
  const res = await fetch(tokenUrl(), { method: "POST", headers, body: new URLSearchParams(form).toString() });
  const { text, json } = await readBody(res);
  return { status: res.status, headers: res.headers, text, json, location: undefined };
}

async function codeForm(a: TestApp = world.pub) {
  const flow = await authorizeWithPassword(world.target.url, {
    clientId: a.clientId,
    redirectUri: a.redirectUri,
    email: world.user.email,
    password: world.user.password,
    scope: "openid email offline_access",
  });
  return codeExchangeForm(flow, a);
}

/** A code exchange bound to `h`: the answer's tokens. */
async function boundTokens(h: Holder, a: TestApp = world.pub) {
  const res = await postToken(await codeForm(a), await proof(h, "POST", tokenUrl()));
  expect(res.status).toBe(200);
  return res.json as { access_token: string; refresh_token: string; token_type: string };
}

const userinfo = (authorization: string, dpop?: string) =>
  request(world.target.url, "GET", "/oauth/userinfo", { headers: { authorization, ...(dpop ? { dpop } : {}) } });

const refreshForm = (token: string, a: TestApp = world.pub) => ({
  grant_type: "refresh_token",
  refresh_token: token,
  client_id: a.clientId,
  ...(a.clientSecret ? { client_secret: a.clientSecret } : {}),
});

describe("DPoP", () => {
  it("X-ID-DPOP-1 a proof signed ES256, EdDSA or RS256 with its public jwk is accepted at the token endpoint", async () => {
    for (const alg of ["ES256", "EdDSA", "RS256"] as const) {
      const t = await boundTokens(await holder(alg));
      expect(t.token_type).toBe("DPoP");
    }
  });

  it("X-ID-DPOP-1 a malformed, mistyped, private-keyed, wrong-request or stale proof is invalid_dpop_proof and spends no code", async () => {
    const h = await holder();
    const form = await codeForm();
    const { privateKey } = await generateKeyPair("ES256", { extractable: true });
    const cases = [
      "not-a-jwt",
      await proof(h, "POST", tokenUrl(), { typ: "JWT" }),
      await proof(h, "GET", tokenUrl()),
      await proof(h, "POST", `${world.target.url}/oauth/revoke`),
      await proof(h, "POST", tokenUrl(), { iat: serverSeconds() - 120 }),
      await proof(h, "POST", tokenUrl(), { iat: serverSeconds() + 120 }),
      // Signed by another key than the jwk it carries.
      await proof({ ...h, privateKey }, "POST", tokenUrl()),
      // A private key in the header.
      await proof(h, "POST", tokenUrl(), { jwk: await exportJWK(privateKey) }),
    ];
    for (const bad of cases) {
      const res = await postToken(form, bad);
      expect(res.status, bad.slice(0, 20)).toBe(400);
      expect(res.json.error).toBe("invalid_dpop_proof");
      expect(res.headers.get("cache-control")).toBe("no-store");
    }
    // htu compares without query or fragment; the code was never spent.
    const ok = await postToken(form, await proof(h, "POST", `${tokenUrl()}?x=1#f`));
    expect(ok.status).toBe(200);
  });

  it("X-ID-DPOP-2 a proof is accepted once, and of concurrent uses exactly one wins", async () => {
    const h = await holder();
    const t = await boundTokens(h);
    const once = await proof(h, "GET", userinfoUrl(), { accessToken: t.access_token });
    const answers = await Promise.all(Array.from({ length: 5 }, () => userinfo(`DPoP ${t.access_token}`, once)));
    expect(answers.filter((r) => r.status === 200)).toHaveLength(1);
    for (const r of answers.filter((r) => r.status !== 200)) {
      expect(r.status).toBe(401);
      expect(r.headers.get("www-authenticate")).toMatch(/^DPoP .*error="invalid_dpop_proof"/);
    }
  });

  it("X-ID-DPOP-2 a replay is refused while its window lasts, on the injected clock", async (ctx) => {
    if (!world.target.clock) return skipOnDeployment(ctx, NEEDS.clock);
    const h = await holder();
    const form = await codeForm();
    const p = await proof(h, "POST", tokenUrl());
    expect((await postToken(form, p)).status).toBe(200);
    const again = await postToken(await codeForm(), p);
    expect(again.json.error).toBe("invalid_dpop_proof");
    expect(again.json.error_description).toMatch(/already used/);
    world.target.clock.advance(61_000);
    expect((await postToken(await codeForm(), p)).json.error_description).toMatch(/iat/);
  });

  it("X-ID-DPOP-3 a proof binds the access token: cnf.jkt is the key's thumbprint and token_type is DPoP; without one, Bearer", async () => {
    const h = await holder();
    const t = await boundTokens(h);
    const { calculateJwkThumbprint } = await import("jose");
    expect(decodeJwt(t.access_token).payload.cnf).toEqual({ jkt: await calculateJwkThumbprint(h.jwk, "sha256") });
    // Introspection describes the binding (RFC 9449 §6.2).
    const described = await request(world.target.url, "POST", "/oauth/introspect", {
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({
        token: t.access_token,
        client_id: world.app.clientId,
        client_secret: world.app.clientSecret!,
      }).toString(),
    });
    expect(described.body).toMatchObject({ active: false });
    const own = await boundTokens(h, world.app);
    const introspected = await request(world.target.url, "POST", "/oauth/introspect", {
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({
        token: own.access_token,
        client_id: world.app.clientId,
        client_secret: world.app.clientSecret!,
      }).toString(),
    });
    expect(introspected.body).toMatchObject({
      active: true,
      token_type: "DPoP",
      cnf: { jkt: await calculateJwkThumbprint(h.jwk, "sha256") },
    });
    const plain = await postToken(await codeForm());
    expect(plain.json.token_type).toBe("Bearer");
    expect(decodeJwt(plain.json.access_token).payload.cnf).toBeUndefined();
  });

  it("X-ID-DPOP-4 a public client's refresh token needs a proof of the same key", async () => {
    const h = await holder();
    const t = await boundTokens(h);
    const none = await postToken(refreshForm(t.refresh_token));
    expect(none.status).toBe(400);
    expect(none.json.error).toBe("invalid_grant");
    const other = await postToken(refreshForm(t.refresh_token), await proof(await holder(), "POST", tokenUrl()));
    expect(other.json.error).toBe("invalid_grant");
    const same = await postToken(refreshForm(t.refresh_token), await proof(h, "POST", tokenUrl()));
    expect(same.status).toBe(200);
    expect(same.json.token_type).toBe("DPoP");
  });

  it("X-ID-DPOP-4 a confidential client's refresh token stays bound to its authentication, not to the key", async () => {
    const h = await holder();
    const t = await boundTokens(h, world.app);
    const res = await postToken(refreshForm(t.refresh_token, world.app));
    expect(res.status).toBe(200);
    expect(res.json.token_type).toBe("Bearer");
  });

  it("X-ID-DPOP-5 userinfo takes Authorization: DPoP with a proof carrying ath, and refuses the bound token as Bearer", async () => {
    const h = await holder();
    const t = await boundTokens(h);
    const ok = await userinfo(`DPoP ${t.access_token}`, await proof(h, "GET", userinfoUrl(), { accessToken: t.access_token }));
    expect(ok.status).toBe(200);
    expect(ok.body.sub).toBe(world.user.id);

    const asBearer = await userinfo(`Bearer ${t.access_token}`);
    expect(asBearer.status).toBe(401);
    expect(asBearer.headers.get("www-authenticate")).toMatch(/^DPoP .*error="invalid_token".*algs="ES256 EdDSA RS256"/);

    const noAth = await userinfo(`DPoP ${t.access_token}`, await proof(h, "GET", userinfoUrl()));
    expect(noAth.status).toBe(401);
    expect(noAth.headers.get("www-authenticate")).toMatch(/error="invalid_dpop_proof"/);

    const otherKey = await holder();
    const wrongKey = await userinfo(`DPoP ${t.access_token}`, await proof(otherKey, "GET", userinfoUrl(), { accessToken: t.access_token }));
    expect(wrongKey.status).toBe(401);
    expect(wrongKey.headers.get("www-authenticate")).toMatch(/error="invalid_token"/);

    const noProof = await userinfo(`DPoP ${t.access_token}`);
    expect(noProof.status).toBe(401);
    expect(noProof.headers.get("www-authenticate")).toMatch(/^DPoP .*error="invalid_dpop_proof"/);
  });

  it("X-ID-DPOP-6 discovery publishes dpop_signing_alg_values_supported", async () => {
    for (const path of ["/.well-known/openid-configuration", "/.well-known/oauth-authorization-server"]) {
      const res = await request(world.target.url, "GET", path);
      expect(res.body.dpop_signing_alg_values_supported).toEqual(["ES256", "EdDSA", "RS256"]);
    }
  });

  it("X-ID-DPOP-7 no server nonce is required: a proof without nonce is served and no DPoP-Nonce is sent", async () => {
    const h = await holder();
    const res = await postToken(await codeForm(), await proof(h, "POST", tokenUrl()));
    expect(res.status).toBe(200);
    expect(res.headers.get("dpop-nonce")).toBeNull();
  });

  it("X-ID-DPOP-3 an independent client (oauth4webapi's DPoP option) exchanges a code, refreshes and calls userinfo with bound tokens", async () => {
    const insecure = { [oauth.allowInsecureRequests]: true } as const;
    const issuer = new URL(world.target.url);
    const as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, insecure));
    expect(as.dpop_signing_alg_values_supported).toContain("ES256");
    // The client's clock follows the server's (the injected one in process).
    const client: oauth.Client = { client_id: world.pub.clientId, [oauth.clockSkew]: serverSeconds() - Math.floor(Date.now() / 1000) };
    const keyPair = await oauth.generateKeyPair("ES256");
    const DPoP = oauth.DPoP(client, keyPair);
    const flow = await authorizeWithPassword(world.target.url, {
      clientId: world.pub.clientId,
      redirectUri: world.pub.redirectUri,
      email: world.user.email,
      password: world.user.password,
      scope: "openid email offline_access",
    });
    const callback = oauth.validateAuthResponse(as, client, new URL(flow.location), flow.state ?? oauth.expectNoState);
    const exchanged = await oauth.processAuthorizationCodeResponse(
      as,
      client,
      await oauth.authorizationCodeGrantRequest(as, client, oauth.None(), callback, world.pub.redirectUri, flow.verifier, {
        ...insecure,
        DPoP,
      }),
    );
    expect(exchanged.token_type).toBe("dpop");
    const jkt = await DPoP.calculateThumbprint();
    expect(decodeJwt(exchanged.access_token).payload.cnf).toEqual({ jkt });

    const refreshed = await oauth.processRefreshTokenResponse(
      as,
      client,
      await oauth.refreshTokenGrantRequest(as, client, oauth.None(), exchanged.refresh_token!, { ...insecure, DPoP }),
    );
    expect(refreshed.token_type).toBe("dpop");

    const info = await oauth.processUserInfoResponse(
      as,
      client,
      oauth.skipSubjectCheck,
      await oauth.userInfoRequest(as, client, refreshed.access_token, { ...insecure, DPoP }),
    );
    expect(info.sub).toBe(world.user.id);

    // Without the key the bound token is worth nothing: as Bearer, userinfo refuses it.
    const asBearer = await oauth.userInfoRequest(as, client, refreshed.access_token, insecure);
    expect(asBearer.status).toBe(401);
  });

  it("X-ID-DPOP-5 the admin API takes a DPoP-bound dashboard token with a proof, and refuses it as Bearer", async () => {
    const h = await holder();
    const dashboard = { clientId: DASHBOARD_CLIENT_ID, redirectUri: `${world.target.url}/dashboard` };
    const flow = await authorizeWithPassword(world.target.url, {
      ...dashboard,
      email: world.organization.admin.email,
      password: world.organization.admin.password,
      scope: "openid profile email",
    });
    const exchanged = await postToken(codeExchangeForm(flow, dashboard), await proof(h, "POST", tokenUrl()));
    expect(exchanged.json.token_type).toBe("DPoP");
    const token = exchanged.json.access_token as string;
    const url = `${world.target.url}/api/applications`;
    const ok = await request(world.target.url, "GET", "/api/applications", {
      headers: { authorization: `DPoP ${token}`, dpop: await proof(h, "GET", url, { accessToken: token }) },
    });
    expect(ok.status).toBe(200);
    const asBearer = await request(world.target.url, "GET", "/api/applications", { token });
    expect(asBearer.status).toBe(401);
    expect(asBearer.body.code).toBe("invalid_token");
    expect(asBearer.headers.get("www-authenticate")).toMatch(/^DPoP .*error="invalid_token"/);
  });
});
