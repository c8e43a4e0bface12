/**
 * private_key_jwt assertions (X-ID-CC-6, X-ID-CC-7) against the verifier and its store on SQLite:
 * claims, algorithms, lifetime, and the jti used exactly once, also by concurrent requests.
 */
import { randomUUID } from "node:crypto";
import { exportJWK, generateKeyPair, SignJWT } from "jose";
import { describe, expect, it } from "vitest";
import knex from "knex";
import { migrations } from "../../handlers/identity/storage/migrations/index.ts";
import { knexClientAssertions } from "../../handlers/identity/storage/client-assertions.ts";
import type { Application } from "../../handlers/identity/storage/applications.ts";
import { createClientAssertionVerifier, assertionClientId } from "../../handlers/identity/domain/oauth/client-assertion.ts";

const TOKEN_URL = "https://id.example/oauth/token";
const now = new Date("2026-03-01T12:00:00Z");
const clock = { now: () => now, setTimeout: () => ({}) as never, clearTimeout: () => {} };

async function setup() {
  const db = knex({ client: "better-sqlite3", connection: { filename: ":memory:" }, useNullAsDefault: true });
  for (const m of Object.values(migrations)) await m.up(db);
  const appId = randomUUID();
  await db("organizations")
    .insert({ id: randomUUID(), name: "o", created_at: now.toISOString() })
    .catch(() => {});
  await db("applications").insert({
    id: appId,
    organization_id: null,
    name: "svc",
    client_id: "svc-client",
    client_type: "confidential",
    redirect_uris: "[]",
    allowed_scopes: "[]",
    enabled_providers: "[]",
    branding: "{}",
    first_party: false,
    created_at: now.toISOString(),
    updated_at: now.toISOString(),
  });
  const app = { id: appId, clientId: "svc-client" } as Application;
  const { privateKey, publicKey } = await generateKeyPair("ES256");
  const jwk = { ...(await exportJWK(publicKey)), kid: "k1", alg: "ES256" };
  const verifier = createClientAssertionVerifier({
    clock,
    audiences: [TOKEN_URL, "https://id.example"],
    assertions: knexClientAssertions(db),
  });
  const t = Math.floor(now.getTime() / 1000);
  // The defaults a client sends; `claims` replaces any of them.
  const sign = (claims: Record<string, unknown> = {}, exp = 60) =>
    new SignJWT({ iss: "svc-client", sub: "svc-client", aud: TOKEN_URL, jti: randomUUID(), iat: t, exp: t + exp, ...claims })
      .setProtectedHeader({ alg: "ES256", kid: "k1" })
      .sign(privateKey);
  return { db, app, verifier, keys: { keys: [jwk] }, sign };
}

describe("private_key_jwt assertions", () => {
  it("X-ID-CC-7 an assertion is accepted once; a concurrent or later replay is invalid_client", async () => {
    const { db, app, verifier, keys, sign } = await setup();
    const assertion = await sign();
    expect(assertionClientId(assertion)).toBe("svc-client");
    const results = await Promise.allSettled([1, 2, 3, 4].map(() => verifier.verify(app, assertion, keys)));
    expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(1);
    await expect(verifier.verify(app, assertion, keys)).rejects.toMatchObject({ code: "invalid_client" });
    await db.destroy();
  });

  it("X-ID-CC-7 iss/sub other than the client, a foreign aud, a long exp or no exp are invalid_client", async () => {
    const { db, app, verifier, keys, sign } = await setup();
    await expect(verifier.verify(app, await sign({ iss: "other" }), keys)).rejects.toMatchObject({ code: "invalid_client" });
    await expect(verifier.verify(app, await sign({ aud: "https://elsewhere.example" }), keys)).rejects.toMatchObject({
      code: "invalid_client",
    });
    await expect(verifier.verify(app, await sign({}, 3600), keys)).rejects.toMatchObject({ code: "invalid_client" });
    await expect(verifier.verify(app, await sign({ exp: undefined }), keys)).rejects.toMatchObject({ code: "invalid_client" });
    await expect(verifier.verify(app, await sign({}, -120), keys)).rejects.toMatchObject({ code: "invalid_client" });
    await expect(verifier.verify(app, await sign({ aud: "https://id.example" }), keys)).resolves.toBeUndefined();
    await db.destroy();
  });

  it("X-ID-CC-6 an assertion signed by an unregistered key or with HS256 is invalid_client", async () => {
    const { db, app, verifier, keys } = await setup();
    const other = await generateKeyPair("ES256");
    const t = Math.floor(now.getTime() / 1000);
    const foreign = await new SignJWT({ jti: "x" })
      .setProtectedHeader({ alg: "ES256", kid: "k1" })
      .setIssuer("svc-client")
      .setSubject("svc-client")
      .setAudience(TOKEN_URL)
      .setExpirationTime(t + 60)
      .sign(other.privateKey);
    await expect(verifier.verify(app, foreign, keys)).rejects.toMatchObject({ code: "invalid_client" });
    const hs = await new SignJWT({ jti: "y" })
      .setProtectedHeader({ alg: "HS256" })
      .setIssuer("svc-client")
      .setSubject("svc-client")
      .setAudience(TOKEN_URL)
      .setExpirationTime(t + 60)
      .sign(new Uint8Array(32));
    await expect(verifier.verify(app, hs, keys)).rejects.toMatchObject({ code: "invalid_client" });
    await db.destroy();
  });
});
