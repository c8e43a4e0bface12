/**
 * Signing keys an operator rotates (X-ID-KEY-1), on two instances of one database and one
 * injected clock, as behind a load balancer: the rotation is made the way
 * `npm run admin -- identity rotate-keys` makes it (server/keys/rotation.ts), and neither instance
 * restarts. A resource server's view is checked too: every token verifies against the JWKS it
 * would fetch at that moment (jose's local JWK set), not only at the service's own endpoints.
 */
import { createLocalJWKSet, jwtVerify, type JSONWebKeySet } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { identityApi } from "../harness/api.ts";
import { keyRingRows } from "../harness/key-ring.ts";
import { identityTarget, type IdentityTarget } from "../harness/targets.ts";
import { request, decodeJwt } from "../harness/http.ts";
import { signedInUser } from "../harness/identity-fixtures.ts";
import { exchangeCode, tokenRequest } from "../harness/oauth-flow.ts";
import { NEEDS, skipOnDeployment } from "../harness/skip.ts";
import { rotateKey } from "../../server/keys/rotation.ts";
import { keyEncryption } from "../../server/security/key-encryption.ts";
import { identityKeyPurposes } from "../../handlers/identity/signing-keys.ts";

let t: IdentityTarget;
let other: { url: string; close(): Promise<void> } | undefined;
beforeAll(async () => {
  t = await identityTarget();
  if (t.anotherInstance) other = await t.anotherInstance();
});
afterAll(async () => {
  await other?.close();
  await t?.close();
});

async function jwks(url: string): Promise<JSONWebKeySet> {
  const res = await identityApi(url).GET("/.well-known/jwks.json");
  expect(res.response.status).toBe(200);
  return res.data!;
}
const kids = async (url: string) => (await jwks(url)).keys.map((k) => k.kid).sort();

/** A resource server's check: the token verifies against the JWKS published now (issuer, expiry by the test clock). */
async function verifiesAgainstJwks(token: string, set: JSONWebKeySet): Promise<boolean> {
  try {
    await jwtVerify(token, createLocalJWKSet(set), { issuer: t.url, algorithms: ["ES256"], currentDate: t.clock!.now() });
    return true;
  } catch {
    return false;
  }
}

/** Accepted by the service itself, at both instances: userinfo answers 200 with the user. */
async function acceptedEverywhere(accessToken: string, userId: string) {
  for (const url of [t.url, other!.url]) {
    const res = await identityApi(url, { token: accessToken }).GET("/oauth/userinfo");
    expect(res.response.status, `userinfo at ${url === t.url ? "the first" : "the second"} instance`).toBe(200);
    expect(res.data!.sub).toBe(userId);
  }
}

/** Refused at both instances: the token's key is gone or it has expired, so it is sent raw, on purpose. */
async function refusedEverywhere(accessToken: string) {
  for (const url of [t.url, other!.url]) {
    const res = await request(url, "GET", "/oauth/userinfo", { token: accessToken });
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toContain('error="invalid_token"');
  }
}

describe("X-ID-KEY-1 signing keys an operator rotates", () => {
  it("X-ID-KEY-1 the next key is published before it signs, signing switches after the delay on every instance without a restart, tokens signed before, during and after verify until they expire, and the old key retires once no token it signed can be valid", async (ctx) => {
    if (!t.clock || !t.service || !other) return skipOnDeployment(ctx, NEEDS.clock);
    const clock = t.clock;
    clock.freeze();
    const t0 = clock.now().getTime();
    /** Moves the clock to `seconds` after the start of the test. */
    const at = (seconds: number) => clock.advance(t0 + seconds * 1000 - clock.now().getTime());
    const { app, user, flow } = await signedInUser(t, "openid offline_access");
    const first = await exchangeCode(t.url, flow, app);
    expect(first.status).toBe(200);
    let refreshToken = first.json.refresh_token as string;
    /** New tokens by the refresh grant at `url` (either instance). */
    const mint = async (url: string) => {
      const res = await tokenRequest(url, {
        grant_type: "refresh_token",
        refresh_token: refreshToken,
        client_id: app.clientId,
        client_secret: app.clientSecret!,
      });
      expect(res.status).toBe(200);
      refreshToken = res.json.refresh_token;
      return { access: res.json.access_token as string, id: res.json.id_token as string };
    };

    // Before: one key, on both instances.
    const [oldKid] = await kids(t.url);
    expect(await kids(other.url)).toEqual([oldKid]);
    const before = { access: first.json.access_token as string, id: first.json.id_token as string };
    expect(decodeJwt(before.access).header.kid).toBe(oldKid);

    // The operator rotates with the shortest delay the contract allows (10 minutes).
    const rotation = await rotateKey({
      db: t.service.db,
      purpose: identityKeyPurposes()[0]!,
      now: clock.now(),
      delaySeconds: 600,
      encryption: keyEncryption(),
    });
    const newKid = rotation.kid;
    expect(rotation.replaces?.kid).toBe(oldKid);

    // During: within a refresh interval (60 s) both instances publish both keys, and still sign with the old one.
    at(61);
    expect(await kids(t.url)).toEqual([oldKid, newKid].sort());
    expect(await kids(other.url)).toEqual([oldKid, newKid].sort());
    const during = await mint(other.url);
    expect(decodeJwt(during.access).header.kid).toBe(oldKid);
    expect(decodeJwt(during.id).header.kid).toBe(oldKid);

    // After the delay (600 s): both instances sign with the new key; every token so far still verifies.
    at(601);
    const after = await mint(t.url);
    const afterOther = await mint(other.url);
    for (const token of [after.access, after.id, afterOther.access, afterOther.id]) expect(decodeJwt(token).header.kid).toBe(newKid);
    const published = await jwks(t.url);
    expect(published.keys.map((k) => k.kid).sort()).toEqual([oldKid, newKid].sort());
    for (const token of [before.access, before.id, during.access, during.id, after.access, after.id, afterOther.access]) {
      expect(await verifiesAgainstJwks(token, published)).toBe(true);
    }
    for (const token of [before.access, during.access, after.access, afterOther.access]) await acceptedEverywhere(token, user.id);

    // Each token verifies until it expires: `before` (issued at 0 s) has expired; `during` (61 s) has not, and the old key still verifies it.
    at(3630);
    await refusedEverywhere(before.access);
    expect(await verifiesAgainstJwks(before.access, await jwks(t.url))).toBe(false);
    await acceptedEverywhere(during.access, user.id);

    // The old key retires an hour after the switch plus a minute of clock skew (600 + 3600 + 60 s):
    // every token it signed has expired by then; it leaves the JWKS of both instances and the database.
    at(4259);
    expect(await kids(other.url)).toEqual([oldKid, newKid].sort());
    at(4261);
    expect(await kids(t.url)).toEqual([newKid]);
    expect(await kids(other.url)).toEqual([newKid]);
    await refusedEverywhere(during.access);
    expect((await keyRingRows(t.service.db, "identity-access")).map((r) => r.kid)).toEqual([newKid]);

    // The new key signs on.
    const later = await mint(other.url);
    expect(decodeJwt(later.access).header.kid).toBe(newKid);
    await acceptedEverywhere(later.access, user.id);
  });
});
