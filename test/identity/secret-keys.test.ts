/**
 * Authorization codes and refresh tokens are stored under keys of either shape (server/security/tokens.ts
 * `secretStorageKey`): their whole SHA-256 (IDENTITY_TOKEN_KEYS=hashed, the default, what earlier
 * versions made) or their issue time and SHA-256 (`time-ordered`). Whichever the setting makes, both
 * are found: switching it either way, or upgrading from an earlier version, logs no one out.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { randomSecret, secretStorageKey, sha256Hex, timeOrderedSecret } from "../../server/security/tokens.ts";
import { createApp, createUser, type TestApp } from "../../conformance/harness/identity-fixtures.ts";
import { authorizeWithPassword, exchangeCode, type FlowResult, tokenRequest } from "../../conformance/harness/oauth-flow.ts";
import { identityTarget, type IdentityTarget } from "../../conformance/harness/targets.ts";

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

type Mode = "hashed" | "time-ordered";
const SHAPE: Record<Mode, { code: RegExp; refresh: RegExp }> = {
  hashed: { code: /^[A-Za-z0-9_-]{43}$/, refresh: /^rt_[A-Za-z0-9_-]{43}$/ },
  "time-ordered": { code: /^[0-9a-f]{12}\.[A-Za-z0-9_-]{43}$/, refresh: /^rt_[0-9a-f]{12}\.[A-Za-z0-9_-]{43}$/ },
};
const OTHER: Record<Mode, (prefix: string) => string> = {
  // What the other setting (or an earlier version, for `hashed`) made.
  hashed: (prefix) => timeOrderedSecret(prefix, Date.now()),
  "time-ordered": (prefix) => `${prefix}${randomSecret()}`,
};

describe.each<Mode>(["hashed", "time-ordered"])("IDENTITY_TOKEN_KEYS=%s", (mode) => {
  let t: IdentityTarget;
  let app: TestApp;
  let user: Awaited<ReturnType<typeof createUser>>;
  beforeAll(async () => {
    t = await identityTarget(mode === "hashed" ? {} : { env: { IDENTITY_TOKEN_KEYS: mode } });
    app = await createApp(t);
    user = await createUser(t);
  });
  afterAll(() => t?.close());

  const basic = () => ({ clientId: app.clientId, secret: app.clientSecret! });
  const signIn = () =>
    authorizeWithPassword(t.url, { ...user, clientId: app.clientId, redirectUri: app.redirectUri, scope: "openid offline_access" });
  const exchange = (flow: FlowResult) =>
    exchangeCode(t.url, flow, { clientId: app.clientId, redirectUri: app.redirectUri, clientSecret: app.clientSecret! });

  test("new codes and refresh tokens have the setting's shape and are stored under their keys", async () => {
    const flow = await signIn();
    expect(flow.code).toMatch(SHAPE[mode].code);
    expect(
      await t
        .service!.db("oauth_codes")
        .where({ code_hash: secretStorageKey(flow.code) })
        .first(),
    ).toBeDefined();
    const exchanged = await exchange(flow);
    expect(exchanged.status).toBe(200);
    const refresh: string = exchanged.json.refresh_token;
    expect(refresh).toMatch(SHAPE[mode].refresh);
    expect(
      await t
        .service!.db("oauth_refresh_tokens")
        .where({ token_hash: secretStorageKey(refresh, "rt_") })
        .first(),
    ).toBeDefined();
  });

  test("a code of the other shape is exchanged, once", async () => {
    const flow = await signIn();
    const other = OTHER[mode]("");
    const moved = await t
      .service!.db("oauth_codes")
      .where({ code_hash: secretStorageKey(flow.code) })
      .update({ code_hash: secretStorageKey(other) });
    expect(moved).toBe(1);
    const first = await exchange({ ...flow, code: other });
    expect(first.status).toBe(200);
    const again = await exchange({ ...flow, code: other });
    expect(again.status).toBe(400);
    expect(again.json.error).toBe("invalid_grant");
  });

  test("a refresh token of the other shape is introspected, rotated, then refused as used", async () => {
    const exchanged = await exchange(await signIn());
    const other = OTHER[mode]("rt_");
    const moved = await t
      .service!.db("oauth_refresh_tokens")
      .where({ token_hash: secretStorageKey(exchanged.json.refresh_token, "rt_") })
      .update({ token_hash: secretStorageKey(other, "rt_") });
    expect(moved).toBe(1);

    const introspected = await tokenRequest(t.url, { token: other }, basic(), "/oauth/introspect");
    expect(introspected.status).toBe(200);
    expect(introspected.json.active).toBe(true);

    const rotated = await tokenRequest(t.url, { grant_type: "refresh_token", refresh_token: other }, basic());
    expect(rotated.status).toBe(200);
    expect(rotated.json.refresh_token).toMatch(SHAPE[mode].refresh);

    const used = await tokenRequest(t.url, { token: other }, basic(), "/oauth/introspect");
    expect(used.json.active).toBe(false);
  });

  test("a refresh token of the other shape is revoked with its grant (RFC 7009)", async () => {
    const exchanged = await exchange(await signIn());
    const other = OTHER[mode]("rt_");
    await t
      .service!.db("oauth_refresh_tokens")
      .where({ token_hash: secretStorageKey(exchanged.json.refresh_token, "rt_") })
      .update({ token_hash: secretStorageKey(other, "rt_") });
    expect((await tokenRequest(t.url, { token: other }, basic(), "/oauth/revoke")).status).toBe(200);
    expect((await tokenRequest(t.url, { grant_type: "refresh_token", refresh_token: other }, basic())).json.error).toBe("invalid_grant");
  });
});
