/**
 * A JWKS published at a URL, fetched and cached: what jose's `createRemoteJWKSet` does, but on the
 * injected Clock, so that a test moves time instead of sleeping through the cooldown, and with the
 * fetch supplied by the caller, whose outbound rules (an address guard, discovery, a size cap) are
 * its own policy. Used by identity for `private_key_jwt` key sets (X-ID-CC-6) and by the repository
 * for its trusted issuer's keys (X-RB-14).
 *
 * Invariants: the set is fetched on first use and again once it is older than `maxAgeMs`; a token
 * whose `kid` it does not hold (the keys were rotated) fetches it once more, unless the last attempt
 * is younger than `cooldownMs`, so tokens with made-up `kid`s cannot make this service hammer the
 * publisher. An attempt counts for the cooldown whether or not it succeeds. Concurrent fetches are
 * shared. A failed fetch rejects with the fetcher's own error (not jose's), so a caller can tell
 * "could not fetch" from "the token is bad"; a body that is not a key set is jose's `JWKSInvalid`.
 */
import { createLocalJWKSet, errors as joseErrors, type JSONWebKeySet, type JWTVerifyGetKey } from "jose";
import type { Clock } from "../clock.ts";

export const DEFAULT_COOLDOWN_MS = 30_000;

export interface RemoteKeySetOptions {
  clock: Clock;
  /** Fetches the JWKS document under the caller's outbound rules: its JSON body, or an error. */
  fetchJson: (url: string) => Promise<unknown>;
  /** How long a fetched set is kept. */
  maxAgeMs: number;
  /** The least time between two fetches caused by an unknown `kid`; default 30 seconds. */
  cooldownMs?: number;
}

type LocalSet = ReturnType<typeof createLocalJWKSet>;

export function createRemoteKeySet(jwksUri: string, o: RemoteKeySetOptions): JWTVerifyGetKey {
  const cooldownMs = o.cooldownMs ?? DEFAULT_COOLDOWN_MS;
  let keys: LocalSet | undefined;
  let attemptedAt = Number.NEGATIVE_INFINITY;
  let pending: Promise<LocalSet> | undefined;
  const now = () => o.clock.now().getTime();

  function reload(): Promise<LocalSet> {
    pending ??= (async () => {
      attemptedAt = now();
      try {
        keys = createLocalJWKSet((await o.fetchJson(jwksUri)) as JSONWebKeySet);
        return keys;
      } finally {
        pending = undefined;
      }
    })();
    return pending;
  }

  return async (header, token) => {
    const current = keys && now() - attemptedAt <= o.maxAgeMs ? keys : await reload();
    try {
      return await current(header, token);
    } catch (err) {
      if (!(err instanceof joseErrors.JWKSNoMatchingKey) || now() - attemptedAt < cooldownMs) throw err;
      return (await reload())(header, token);
    }
  };
}
