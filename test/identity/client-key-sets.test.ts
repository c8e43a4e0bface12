/**
 * A client's published keys (X-ID-CC-6): fetched on first use, kept, fetched again on an unknown
 * `kid` at most once per cooldown on the injected clock, and again once they are old.
 */
import { exportJWK, generateKeyPair, type JWK } from "jose";
import { describe, expect, it } from "vitest";
import { ManualClock } from "../../server/clock.ts";
import { COOLDOWN_MS, createClientKeySets, MAX_AGE_MS } from "../../handlers/identity/domain/oauth/client-key-sets.ts";
import type { Application } from "../../handlers/identity/storage/applications.ts";

const URI = "https://client.example/jwks.json";
const app = { jwks: null, jwksUri: URI } as unknown as Application;

async function publicJwk(kid: string): Promise<JWK> {
  const { publicKey } = await generateKeyPair("ES256");
  return { ...(await exportJWK(publicKey)), kid, alg: "ES256" };
}

function setup(initial: JWK[]) {
  const clock = new ManualClock();
  const published = { keys: initial };
  let fetches = 0;
  const sets = createClientKeySets({
    clock,
    fetchJson: async () => {
      fetches++;
      return { keys: [...published.keys] };
    },
  });
  const keyOf = (kid: string) => sets.keysOf(app)!({ alg: "ES256", kid }, { payload: "", signature: "" } as never);
  return { clock, published, keyOf, fetches: () => fetches };
}

describe("client key sets", () => {
  it("X-ID-CC-6 a jwksUri is fetched once and kept; an unknown kid refetches at most once per cooldown", async () => {
    const s = setup([await publicJwk("a")]);
    await s.keyOf("a");
    await s.keyOf("a");
    expect(s.fetches()).toBe(1);
    // Unknown kid right after the fetch: inside the cooldown, no new fetch.
    await expect(s.keyOf("b")).rejects.toThrow();
    expect(s.fetches()).toBe(1);
    s.published.keys.push(await publicJwk("b"));
    s.clock.advance(COOLDOWN_MS);
    await s.keyOf("b");
    expect(s.fetches()).toBe(2);
    // Made-up kids cannot make it fetch again within the cooldown.
    await expect(s.keyOf("zzz")).rejects.toThrow();
    await expect(s.keyOf("yyy")).rejects.toThrow();
    expect(s.fetches()).toBe(2);
  });

  it("X-ID-CC-6 the kept set is fetched again once it is older than its maximum age", async () => {
    const s = setup([await publicJwk("a")]);
    await s.keyOf("a");
    s.clock.advance(MAX_AGE_MS + 1);
    await s.keyOf("a");
    expect(s.fetches()).toBe(2);
  });

  it("X-ID-CC-6 registered jwks are used as they are, with no fetch", async () => {
    const s = setup([]);
    const local = { jwks: { keys: [await publicJwk("k")] }, jwksUri: null } as unknown as Application;
    const sets = createClientKeySets({ clock: s.clock, fetchJson: async () => expect.fail("no fetch") });
    await sets.keysOf(local)!({ alg: "ES256", kid: "k" }, { payload: "", signature: "" } as never);
    expect(sets.keysOf({ jwks: null, jwksUri: null } as unknown as Application)).toBeUndefined();
  });
});
