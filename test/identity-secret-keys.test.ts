/**
 * Authorization codes and refresh tokens are stored under time-ordered keys (server/security/tokens.ts
 * `timeOrderedSecret`, `secretStorageKey`), and the codes and tokens a previous version stored under
 * their whole SHA-256 still work: a rolling deployment, or a refresh token issued a month before the
 * upgrade, is not logged out.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { randomSecret, secretStorageKey, sha256Hex, timeOrderedSecret } from "../server/security/tokens.ts";
import {
  authorizeWithPassword,
  createApp,
  createUser,
  exchangeCode,
  tokenRequest,
  type TestApp,
} from "../conformance/harness/oauth-flow.ts";
import { identityTarget, type IdentityTarget } from "../conformance/harness/targets.ts";

describe("time-ordered secret keys", () => {
  test("a secret shows its issue time; its key is that time and 52 hex digits of its SHA-256", () => {
    const at = Date.UTC(2026, 10, 26, 23, 0, 0, 123);
    const secret = timeOrderedSecret("rt_", at);
    expect(secret).toMatch(/^rt_[0-9a-f]{12}\.[A-Za-z0-9_-]{43}$/);
    expect(Number.parseInt(secret.slice(3, 15), 16)).toBe(at);
    const key = secretStorageKey(secret, "rt_");
    expect(key).toBe(secret.slice(3, 15) + sha256Hex(secret).slice(0, 52));
    expect(key).toHaveLength(64);
  });

  test("keys sort by issue time, so new rows append to their index", () => {
    const times = [1_700_000_000_000, 1_700_000_000_001, 1_800_000_000_000, 2_000_000_000_000];
    const keys = times.map((t) => secretStorageKey(timeOrderedSecret("", t)));
    expect([...keys].sort()).toEqual(keys);
  });

  test("a secret of any other shape (made before these keys) is keyed by its whole SHA-256", () => {
    for (const legacy of [randomSecret(), `rt_${randomSecret()}`, "rt_0123456789ab", "0123456789AB.x", "rt_.x"]) {
      expect(secretStorageKey(legacy, "rt_")).toBe(sha256Hex(legacy));
    }
    // The prefix is part of the shape: a refresh token's key is not read from a code's place.
    const code = timeOrderedSecret("", Date.now());
    expect(secretStorageKey(code, "rt_")).toBe(sha256Hex(code));
  });
});

describe("codes and refresh tokens stored by an earlier version", () => {
  let t: IdentityTarget;
  let app: TestApp;
  let user: Awaited<ReturnType<typeof createUser>>;
  beforeAll(async () => {
    t = await identityTarget();
    app = await createApp(t);
    user = await createUser(t);
  });
  afterAll(() => t?.close());

  const basic = () => ({ clientId: app.clientId, secret: app.clientSecret! });

  test("new codes and refresh tokens are time-ordered and stored under their keys", async () => {
    const flow = await authorizeWithPassword(t.url, {
      ...user,
      clientId: app.clientId,
      redirectUri: app.redirectUri,
      scope: "openid offline_access",
    });
    expect(flow.code).toMatch(/^[0-9a-f]{12}\./);
    expect(
      await t
        .service!.db("oauth_codes")
        .where({ code_hash: secretStorageKey(flow.code) })
        .first(),
    ).toBeDefined();
    const exchanged = await exchangeCode(t.url, flow, {
      clientId: app.clientId,
      redirectUri: app.redirectUri,
      clientSecret: app.clientSecret!,
    });
    expect(exchanged.status).toBe(200);
    const refresh: string = exchanged.json.refresh_token;
    expect(refresh).toMatch(/^rt_[0-9a-f]{12}\./);
    expect(
      await t
        .service!.db("oauth_refresh_tokens")
        .where({ token_hash: secretStorageKey(refresh, "rt_") })
        .first(),
    ).toBeDefined();
  });

  test("a code stored under its whole SHA-256 is exchanged, once", async () => {
    const flow = await authorizeWithPassword(t.url, {
      ...user,
      clientId: app.clientId,
      redirectUri: app.redirectUri,
      scope: "openid offline_access",
    });
    const legacyCode = randomSecret();
    const moved = await t
      .service!.db("oauth_codes")
      .where({ code_hash: secretStorageKey(flow.code) })
      .update({ code_hash: sha256Hex(legacyCode) });
    expect(moved).toBe(1);
    const legacyFlow = { ...flow, code: legacyCode };
    const first = await exchangeCode(t.url, legacyFlow, {
      clientId: app.clientId,
      redirectUri: app.redirectUri,
      clientSecret: app.clientSecret!,
    });
    expect(first.status).toBe(200);
    const again = await exchangeCode(t.url, legacyFlow, {
      clientId: app.clientId,
      redirectUri: app.redirectUri,
      clientSecret: app.clientSecret!,
    });
    expect(again.status).toBe(400);
    expect(again.json.error).toBe("invalid_grant");
  });

  test("a refresh token stored under its whole SHA-256 is introspected, rotated, then refused as used", async () => {
    const flow = await authorizeWithPassword(t.url, {
      ...user,
      clientId: app.clientId,
      redirectUri: app.redirectUri,
      scope: "openid offline_access",
    });
    const exchanged = await exchangeCode(t.url, flow, {
      clientId: app.clientId,
      redirectUri: app.redirectUri,
      clientSecret: app.clientSecret!,
    });
    const legacy = `rt_${randomSecret()}`;
    const moved = await t
      .service!.db("oauth_refresh_tokens")
      .where({ token_hash: secretStorageKey(exchanged.json.refresh_token, "rt_") })
      .update({ token_hash: sha256Hex(legacy) });
    expect(moved).toBe(1);

    const introspected = await tokenRequest(t.url, { token: legacy }, basic(), "/oauth/introspect");
    expect(introspected.status).toBe(200);
    expect(introspected.json.active).toBe(true);

    const rotated = await tokenRequest(t.url, { grant_type: "refresh_token", refresh_token: legacy }, basic());
    expect(rotated.status).toBe(200);
    expect(rotated.json.refresh_token).toMatch(/^rt_[0-9a-f]{12}\./);

    const used = await tokenRequest(t.url, { token: legacy }, basic(), "/oauth/introspect");
    expect(used.json.active).toBe(false);
  });
});
