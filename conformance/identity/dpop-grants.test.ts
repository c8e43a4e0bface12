/**
 * DPoP (RFC 9449) on the grants without a browser redirect: client_credentials and the device
 * code bind their tokens as the code and refresh grants do (X-ID-DPOP-3, X-ID-DPOP-4).
 */
import { createHash, randomUUID } from "node:crypto";
import { exportJWK, generateKeyPair, type JWK, SignJWT } from "jose";
import * as oauth from "oauth4webapi";
import { describe, expect, it } from "vitest";
import { fileWorld, identityWorld } from "../harness/worlds.ts";
import { decodeJwt, readBody, request } from "../harness/http.ts";
import type { TestApp } from "../harness/identity-fixtures.ts";
import { authorizeWithPassword, type Browser, codeExchangeForm, type HttpResult } from "../harness/oauth-flow.ts";

const world = fileWorld(() =>
  identityWorld({
    apps: { tv: { clientType: "public", deviceAuthorization: true }, plain: { clientType: "public" }, spa: { clientType: "public" } },
    user: true,
    admin: true,
  }),
);

const DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code";

interface Holder {
  privateKey: Awaited<ReturnType<typeof generateKeyPair>>["privateKey"];
  jwk: JWK;
}

async function holder(): Promise<Holder> {
  const { privateKey, publicKey } = await generateKeyPair("ES256");
  return { privateKey, jwk: await exportJWK(publicKey) };
}

const serverSeconds = () => Math.floor((world.target.clock?.now().getTime() ?? Date.now()) / 1000);
const tokenUrl = () => `${world.target.url}/oauth/token`;

async function proof(h: Holder, htm = "POST", htu = tokenUrl()): Promise<string> {
  return new SignJWT({ htm, htu, jti: randomUUID(), iat: serverSeconds() })
    .setProtectedHeader({ alg: "ES256", typ: "dpop+jwt", jwk: h.jwk })
    .sign(h.privateKey);
}

const thumbprint = (jwk: JWK) =>
  createHash("sha256")
    .update(JSON.stringify({ crv: jwk.crv, kty: jwk.kty, x: jwk.x, y: jwk.y }))
    .digest("base64url");

async function postToken(form: Record<string, string>, dpop?: string, path = "/oauth/token"): Promise<HttpResult> {
  const headers: Record<string, string> = { "content-type": "application/x-www-form-urlencoded" };
  if (dpop !== undefined) headers.dpop = dpop;
  const res = await fetch(`${world.target.url}${path}`, { method: "POST", headers, body: new URLSearchParams(form).toString() });
  const { text, json } = await readBody(res);
  return { status: res.status, headers: res.headers, text, json, location: undefined };
}

/** An application of the admin's organization, through the admin API. */
async function adminApp(body: Record<string, unknown>) {
  const res = await request<{ id: string; clientId: string; clientSecret: string }>(world.target.url, "POST", "/api/applications", {
    token: world.adminToken,
    json: {
      name: `DPoP ${randomUUID().slice(0, 6)}`,
      clientType: "confidential",
      redirectUris: ["https://dpop.example/callback"],
      ...body,
    },
  });
  expect(res.status, res.text).toBe(201);
  return res.body;
}

/** A confidential application with the client_credentials grant. */
const ccApp = (extra: Record<string, unknown> = {}) =>
  adminApp({ clientCredentials: { enabled: true, scopes: ["reports:read"] }, ...extra });

const csrfOf = (html: string) => /name="csrf_token" value="([^"]+)"/.exec(html)![1]!;

/** Starts a device authorization for `a` and has the world's user approve it: the device code. */
async function approvedDeviceCode(a: Pick<TestApp, "clientId">): Promise<string> {
  const started = await postToken({ client_id: a.clientId, scope: "openid offline_access" }, undefined, "/oauth/device_authorization");
  expect(started.status).toBe(200);
  const { device_code: deviceCode, user_code: userCode } = started.json as { device_code: string; user_code: string };
  const browser: Browser = (
    await authorizeWithPassword(world.target.url, {
      clientId: world.plain.clientId,
      redirectUri: world.plain.redirectUri,
      email: world.user.email,
      password: world.user.password,
    })
  ).browser;
  const form = await browser.get(`/device?user_code=${encodeURIComponent(userCode)}`);
  const consent = await browser.post("/device", { csrf_token: csrfOf(form.text), user_code: userCode, action: "lookup" });
  const approved = await browser.post("/device", { csrf_token: csrfOf(consent.text), user_code: userCode, action: "approve" });
  expect(approved.status).toBe(200);
  return deviceCode;
}

describe("DPoP on client_credentials and the device grant", () => {
  it("X-ID-DPOP-3 client_credentials with a proof answers a DPoP token bound to the key; without one, Bearer", async () => {
    const app = await ccApp();
    const h = await holder();
    const form = { grant_type: "client_credentials", client_id: app.clientId, client_secret: app.clientSecret };
    const bound = await postToken(form, await proof(h));
    expect(bound.status, bound.text).toBe(200);
    expect(bound.json.token_type).toBe("DPoP");
    expect(bound.json.refresh_token).toBeUndefined();
    expect(decodeJwt(bound.json.access_token).payload.cnf).toEqual({ jkt: thumbprint(h.jwk) });

    const plain = await postToken(form);
    expect(plain.json.token_type).toBe("Bearer");
    expect(decodeJwt(plain.json.access_token).payload.cnf).toBeUndefined();

    const broken = await postToken(form, "not-a-jwt");
    expect(broken.status).toBe(400);
    expect(broken.json.error).toBe("invalid_dpop_proof");
  });

  it("X-ID-DPOP-4 the device grant binds the access token and a public client's refresh token to the proof's key", async () => {
    const h = await holder();
    const deviceCode = await approvedDeviceCode(world.tv);
    const answer = await postToken({ grant_type: DEVICE_GRANT, device_code: deviceCode, client_id: world.tv.clientId }, await proof(h));
    expect(answer.status, answer.text).toBe(200);
    expect(answer.json.token_type).toBe("DPoP");
    expect(decodeJwt(answer.json.access_token).payload.cnf).toEqual({ jkt: thumbprint(h.jwk) });

    const refresh = { grant_type: "refresh_token", refresh_token: answer.json.refresh_token as string, client_id: world.tv.clientId };
    const withoutProof = await postToken(refresh);
    expect(withoutProof.status).toBe(400);
    expect(withoutProof.json.error).toBe("invalid_grant");
    const otherKey = await postToken(refresh, await proof(await holder()));
    expect(otherKey.json.error).toBe("invalid_grant");
    const rotated = await postToken(refresh, await proof(h));
    expect(rotated.status, rotated.text).toBe(200);
    expect(rotated.json.token_type).toBe("DPoP");
  });

  it("X-ID-DPOP-8 dpopBoundAccessTokens: the admin API keeps the setting, and the token endpoint refuses its grants without a proof", async () => {
    const app = await ccApp({ dpopBoundAccessTokens: true });
    const shown = await request<{ dpopBoundAccessTokens: boolean }>(world.target.url, "GET", `/api/applications/${app.id}`, {
      token: world.adminToken,
    });
    expect(shown.body.dpopBoundAccessTokens).toBe(true);
    const form = { grant_type: "client_credentials", client_id: app.clientId, client_secret: app.clientSecret };
    const refused = await postToken(form);
    expect(refused.status).toBe(400);
    expect(refused.json.error).toBe("invalid_dpop_proof");
    const bound = await postToken(form, await proof(await holder()));
    expect(bound.status, bound.text).toBe(200);
    expect(bound.json.token_type).toBe("DPoP");
    // A wrong secret is still invalid_client first: the proof is checked after authentication.
    expect((await postToken({ ...form, client_secret: "wrong" })).status).toBe(401);
    // Turned off, the same request is served again, as Bearer.
    const id = app.id;
    const patched = await request(world.target.url, "PATCH", `/api/applications/${id}`, {
      token: world.adminToken,
      json: { dpopBoundAccessTokens: false },
    });
    expect(patched.status, patched.text).toBe(200);
    expect((await postToken(form)).json.token_type).toBe("Bearer");
    // A new application is not bound unless asked.
    expect(
      (await request<{ dpopBoundAccessTokens: boolean }>(world.target.url, "GET", `/api/applications/${id}`, { token: world.adminToken }))
        .body.dpopBoundAccessTokens,
    ).toBe(false);
  });

  it("X-ID-DPOP-8 a bound public device client: a poll without a proof is invalid_dpop_proof and spends nothing", async () => {
    const tv = await adminApp({
      clientType: "public",
      deviceAuthorization: true,
      dpopBoundAccessTokens: true,
      allowedScopes: ["openid", "offline_access"],
    });
    const deviceCode = await approvedDeviceCode(tv);
    const poll = { grant_type: DEVICE_GRANT, device_code: deviceCode, client_id: tv.clientId };
    const refused = await postToken(poll);
    expect(refused.status).toBe(400);
    expect(refused.json.error).toBe("invalid_dpop_proof");
    // The refused poll never reached the grant: no slow_down, and the code still gives tokens.
    const answer = await postToken(poll, await proof(await holder()));
    expect(answer.status, answer.text).toBe(200);
    expect(answer.json.token_type).toBe("DPoP");
  });

  it("X-ID-DPOP-9 a page sends DPoP to token and userinfo cross-origin, and may read DPoP-Nonce", async () => {
    const origin = new URL(world.spa.redirectUri).origin;
    for (const [path, method] of [
      ["/oauth/token", "POST"],
      ["/oauth/userinfo", "GET"],
    ] as const) {
      const pre = await request(world.target.url, "OPTIONS", path, {
        headers: { origin, "access-control-request-method": method, "access-control-request-headers": "authorization, dpop" },
      });
      expect(pre.status, path).toBe(204);
      expect(pre.headers.get("access-control-allow-headers"), path).toMatch(/\bDPoP\b/);
    }
    const flow = await authorizeWithPassword(world.target.url, {
      clientId: world.spa.clientId,
      redirectUri: world.spa.redirectUri,
      email: world.user.email,
      password: world.user.password,
      scope: "openid email",
    });
    const h = await holder();
    const res = await fetch(`${world.target.url}/oauth/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", origin, dpop: await proof(h) },
      body: new URLSearchParams(codeExchangeForm(flow, world.spa)).toString(),
    });
    const exchanged = (await readBody(res)).json as { access_token: string; token_type: string };
    expect(res.status).toBe(200);
    expect(exchanged.token_type).toBe("DPoP");
    expect(res.headers.get("access-control-allow-origin")).toBe(origin);
    expect(res.headers.get("access-control-expose-headers")).toBe("WWW-Authenticate, DPoP-Nonce");

    // The client of `Authorization: DPoP` is the token's: its page reads the answer.
    const userinfoUrl = `${world.target.url}/oauth/userinfo`;
    const ath = createHash("sha256").update(exchanged.access_token).digest("base64url");
    const infoProof = await new SignJWT({ htm: "GET", htu: userinfoUrl, jti: randomUUID(), iat: serverSeconds(), ath })
      .setProtectedHeader({ alg: "ES256", typ: "dpop+jwt", jwk: h.jwk })
      .sign(h.privateKey);
    const info = await request(world.target.url, "GET", "/oauth/userinfo", {
      headers: { origin, authorization: `DPoP ${exchanged.access_token}`, dpop: infoProof },
    });
    expect(info.status, info.text).toBe(200);
    expect(info.headers.get("access-control-allow-origin")).toBe(origin);
    expect(info.headers.get("access-control-expose-headers")).toBe("WWW-Authenticate, DPoP-Nonce");
  });

  it("X-ID-DPOP-3 an independent client (oauth4webapi's DPoP option) gets a bound client_credentials token", async () => {
    const insecure = { [oauth.allowInsecureRequests]: true } as const;
    const issuer = new URL(world.target.url);
    const as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, insecure));
    const app = await ccApp();
    const client: oauth.Client = { client_id: app.clientId, [oauth.clockSkew]: serverSeconds() - Math.floor(Date.now() / 1000) };
    const keyPair = await oauth.generateKeyPair("ES256");
    const DPoP = oauth.DPoP(client, keyPair);
    const answer = await oauth.processClientCredentialsResponse(
      as,
      client,
      await oauth.clientCredentialsGrantRequest(as, client, oauth.ClientSecretPost(app.clientSecret), new URLSearchParams(), {
        ...insecure,
        DPoP,
      }),
    );
    expect(answer.token_type).toBe("dpop");
    expect(decodeJwt(answer.access_token).payload.cnf).toEqual({ jkt: await DPoP.calculateThumbprint() });
  });
});
