/** DPoP server nonces as a deployment setting (X-ID-DPOP-7, RFC 9449 §8), rotated on the injected clock. */
import { randomUUID } from "node:crypto";
import { createHash } from "node:crypto";
import { exportJWK, generateKeyPair, SignJWT } from "jose";
import { describe, expect, it } from "vitest";
import { fileWorld, identityWorld } from "../harness/worlds.ts";
import { readBody, request } from "../harness/http.ts";
import { authorizeWithPassword, codeExchangeForm } from "../harness/oauth-flow.ts";
import { NEEDS, skipOnDeployment } from "../harness/skip.ts";

const world = fileWorld(() =>
  identityWorld({ apps: { pub: { clientType: "public" } }, user: true, env: { IDENTITY_DPOP_NONCE_SECONDS: "300" } }),
);

const keys = await generateKeyPair("ES256");
const jwk = await exportJWK(keys.publicKey);
const serverSeconds = () => Math.floor((world.target.clock?.now().getTime() ?? Date.now()) / 1000);

const proof = (htm: string, htu: string, o: { nonce?: string; accessToken?: string } = {}) =>
  new SignJWT({
    htm,
    htu,
    jti: randomUUID(),
    iat: serverSeconds(),
    ...(o.nonce ? { nonce: o.nonce } : {}),
    ...(o.accessToken ? { ath: createHash("sha256").update(o.accessToken).digest("base64url") } : {}),
  })
    .setProtectedHeader({ alg: "ES256", typ: "dpop+jwt", jwk })
    .sign(keys.privateKey);

async function postToken(form: Record<string, string>, dpop: string) {
  const res = await fetch(`${world.target.url}/oauth/token`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", dpop },
    body: new URLSearchParams(form).toString(),
  });
  return { status: res.status, headers: res.headers, ...(await readBody(res)) };
}

async function codeForm() {
  const flow = await authorizeWithPassword(world.target.url, {
    clientId: world.pub.clientId,
    redirectUri: world.pub.redirectUri,
    email: world.user.email,
    password: world.user.password,
    scope: "openid",
  });
  return codeExchangeForm(flow, world.pub);
}

describe("DPoP nonces", () => {
  it("X-ID-DPOP-7 with nonces required, a proof without one is use_dpop_nonce with the nonce to retry with", async (ctx) => {
    if (!world.target.clock) return skipOnDeployment(ctx, NEEDS.clock);
    const tokenUrl = `${world.target.url}/oauth/token`;
    const form = await codeForm();
    const first = await postToken(form, await proof("POST", tokenUrl));
    expect(first.status).toBe(400);
    expect(first.json.error).toBe("use_dpop_nonce");
    const nonce = first.headers.get("dpop-nonce");
    expect(nonce).toBeTruthy();
    expect((await postToken(form, await proof("POST", tokenUrl, { nonce: "made-up" }))).json.error).toBe("use_dpop_nonce");

    const ok = await postToken(form, await proof("POST", tokenUrl, { nonce: nonce! }));
    expect(ok.status).toBe(200);
    expect(ok.json.token_type).toBe("DPoP");
    expect(ok.headers.get("dpop-nonce")).toBe(nonce);
    const token = ok.json.access_token as string;

    // UserInfo: 401 with a DPoP challenge and the nonce; then served with it.
    const userinfoUrl = `${world.target.url}/oauth/userinfo`;
    const get = async (dpop: string) =>
      request(world.target.url, "GET", "/oauth/userinfo", { headers: { authorization: `DPoP ${token}`, dpop } });
    const refused = await get(await proof("GET", userinfoUrl, { accessToken: token }));
    expect(refused.status).toBe(401);
    expect(refused.headers.get("www-authenticate")).toMatch(/^DPoP .*error="use_dpop_nonce"/);
    expect(refused.headers.get("dpop-nonce")).toBe(nonce);
    expect((await get(await proof("GET", userinfoUrl, { accessToken: token, nonce: nonce! }))).status).toBe(200);

    // Rotation on the injected clock: the previous nonce is still accepted one period, then not.
    world.target.clock.advance(300_000);
    expect((await get(await proof("GET", userinfoUrl, { accessToken: token, nonce: nonce! }))).status).toBe(200);
    world.target.clock.advance(300_000);
    const stale = await get(await proof("GET", userinfoUrl, { accessToken: token, nonce: nonce! }));
    expect(stale.status).toBe(401);
    const fresh = stale.headers.get("dpop-nonce");
    expect(fresh).toBeTruthy();
    expect(fresh).not.toBe(nonce);
  });
});
