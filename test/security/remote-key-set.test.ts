/**
 * The shared remote JWKS cache (server/security/remote-key-set.ts): concurrent fetches are shared,
 * a failed fetch keeps the fetcher's error and counts for the cooldown, and a rotated key is found
 * after the cooldown on the injected clock. Identity's and the repository's policies on top of it
 * are tested in test/identity/client-key-sets.test.ts and conformance/repository/trusted-issuer.test.ts.
 */
import { errors as joseErrors, exportJWK, generateKeyPair, type JWK } from "jose";
import { describe, expect, it } from "vitest";
import { ManualClock } from "../../server/clock.ts";
import { createRemoteKeySet, DEFAULT_COOLDOWN_MS } from "../../server/security/remote-key-set.ts";

async function publicJwk(kid: string): Promise<JWK> {
  const { publicKey } = await generateKeyPair("ES256");
  return { ...(await exportJWK(publicKey)), kid, alg: "ES256" };
}

function setup(fetchJson: () => Promise<unknown>) {
  const clock = new ManualClock();
  let fetches = 0;
  const keys = createRemoteKeySet("https://issuer.example/jwks", {
    clock,
    maxAgeMs: 600_000,
    fetchJson: () => {
      fetches++;
      return fetchJson();
    },
  });
  const keyOf = async (kid: string) => keys({ alg: "ES256", kid }, { payload: "", signature: "" } as never);
  return { clock, keyOf, fetches: () => fetches };
}

describe("remote key set", () => {
  it("concurrent first uses share one fetch", async () => {
    const jwk = await publicJwk("a");
    const { keyOf, fetches } = setup(async () => ({ keys: [jwk] }));
    await Promise.all([keyOf("a"), keyOf("a"), keyOf("a")]);
    expect(fetches()).toBe(1);
  });

  it("a failed fetch rejects with the fetcher's error, and is tried again by the next use", async () => {
    let fail = true;
    const jwk = await publicJwk("a");
    const { keyOf, fetches } = setup(async () => {
      if (fail) throw new Error("unreachable");
      return { keys: [jwk] };
    });
    const err = await keyOf("a").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect(err).not.toBeInstanceOf(joseErrors.JOSEError);
    fail = false;
    await expect(keyOf("a")).resolves.toBeDefined();
    expect(fetches()).toBe(2);
  });

  it("an unknown kid refetches only once the cooldown since the last attempt has passed", async () => {
    const published: JWK[] = [await publicJwk("old")];
    const { clock, keyOf, fetches } = setup(async () => ({ keys: [...published] }));
    await keyOf("old");
    published.push(await publicJwk("new"));
    await expect(keyOf("new")).rejects.toBeInstanceOf(joseErrors.JWKSNoMatchingKey);
    expect(fetches()).toBe(1);
    clock.advance(DEFAULT_COOLDOWN_MS);
    await expect(keyOf("new")).resolves.toBeDefined();
    expect(fetches()).toBe(2);
  });
});
