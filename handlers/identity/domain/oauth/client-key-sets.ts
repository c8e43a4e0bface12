/**
 * The keys an application's `private_key_jwt` assertions are checked with (X-ID-CC-6): its
 * registered `jwks`, or the set published at its `jwksUri`, kept for MAX_AGE_MS and fetched again
 * for an unknown `kid` at most once per COOLDOWN_MS (server/security/remote-key-set.ts does the
 * caching). This module's policy: one cached set per URL, shared by the applications that name it,
 * at most MAX_ENTRIES of them, fetched by the caller's (SSRF-guarded) `fetchJson`. Kept per
 * instance in memory: a cache, never the source of truth.
 */
import { createLocalJWKSet, type JSONWebKeySet, type JWTVerifyGetKey } from "jose";
import type { Clock } from "../../../../server/clock.ts";
import { createRemoteKeySet } from "../../../../server/security/remote-key-set.ts";
import type { Application } from "../../storage/applications.ts";

export const COOLDOWN_MS = 30_000;
export const MAX_AGE_MS = 5 * 60_000;
/** Distinct URLs kept at most; the oldest entry goes first. */
const MAX_ENTRIES = 1_000;

export interface ClientKeySets {
  /** The key resolver for `app`'s assertions, or undefined when it registered no keys. */
  keysOf(app: Application): JWTVerifyGetKey | undefined;
}

export function createClientKeySets(deps: { clock: Clock; fetchJson: (url: string) => Promise<unknown> }): ClientKeySets {
  const remotes = new Map<string, JWTVerifyGetKey>();

  function remote(url: string): JWTVerifyGetKey {
    let keys = remotes.get(url);
    if (!keys) {
      if (remotes.size >= MAX_ENTRIES) remotes.delete(remotes.keys().next().value!);
      keys = createRemoteKeySet(url, { clock: deps.clock, fetchJson: deps.fetchJson, maxAgeMs: MAX_AGE_MS, cooldownMs: COOLDOWN_MS });
      remotes.set(url, keys);
    }
    return keys;
  }

  return {
    keysOf(app) {
      if (app.jwks) return createLocalJWKSet(app.jwks as JSONWebKeySet);
      if (app.jwksUri) return remote(app.jwksUri);
      return undefined;
    },
  };
}
