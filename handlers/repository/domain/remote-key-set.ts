/**
 * A trusted issuer's JWKS, fetched and cached (X-RB-14). What jose's `createRemoteJWKSet` does,
 * but on the injected Clock, so that a test moves time instead of sleeping through the cooldown:
 * the set is fetched on first use and again when it is older than `maxAgeMs`; a token whose `kid`
 * it does not hold (the issuer rotated its keys) fetches it once more, unless the last fetch is
 * younger than `cooldownMs`, so tokens with made-up `kid`s cannot make this service hammer the
 * issuer. Concurrent fetches are shared. A failed fetch throws an error that is not jose's: the
 * caller tells "could not fetch" from "the token is bad" by that.
 */
import { createLocalJWKSet, errors as joseErrors, type JSONWebKeySet, type JWTVerifyGetKey } from "jose";
import type { Clock } from "../../../server/clock.ts";

export interface RemoteKeySetOptions {
  clock: Clock;
  /** Fetches the JWKS document under the outbound rules; its JSON body, or an error. */
  fetchJson: (url: string) => Promise<unknown>;
  cooldownMs?: number;
  maxAgeMs?: number;
}

export function createRemoteKeySet(jwksUri: string, o: RemoteKeySetOptions): JWTVerifyGetKey {
  const cooldownMs = o.cooldownMs ?? 30_000;
  const maxAgeMs = o.maxAgeMs ?? 10 * 60_000;
  let local: ReturnType<typeof createLocalJWKSet> | undefined;
  let fetchedAt = Number.NEGATIVE_INFINITY;
  let pending: Promise<ReturnType<typeof createLocalJWKSet>> | undefined;

  function reload() {
    pending ??= o
      .fetchJson(jwksUri)
      .then((body) => {
        // Throws jose's JWKSInvalid when the body is not a key set.
        local = createLocalJWKSet(body as JSONWebKeySet);
        fetchedAt = o.clock.now().getTime();
        return local;
      })
      .finally(() => {
        pending = undefined;
      });
    return pending;
  }

  return async (header, token) => {
    const now = o.clock.now().getTime();
    const keys = local && now - fetchedAt <= maxAgeMs ? local : await reload();
    try {
      return await keys(header, token);
    } catch (err) {
      if (!(err instanceof joseErrors.JWKSNoMatchingKey) || o.clock.now().getTime() - fetchedAt < cooldownMs) throw err;
      return (await reload())(header, token);
    }
  };
}
