/**
 * The keys an application's `private_key_jwt` assertions are checked with (X-ID-CC-6): its
 * registered `jwks`, or the set published at its `jwksUri`. A published set is fetched on first
 * use and kept for MAX_AGE_MS; an assertion whose `kid` it does not hold (the client rotated its
 * keys) fetches it again, but at most once per COOLDOWN_MS on the injected clock, so assertions
 * with made-up `kid`s cannot make this service hammer the client's host. Concurrent fetches of
 * one URL are shared. Kept per instance in memory: a cache, never the source of truth.
 */
import { createLocalJWKSet, errors as joseErrors, type JSONWebKeySet, type JWTVerifyGetKey } from "jose";
import type { Clock } from "../../../../server/clock.ts";
import type { Application } from "../../storage/applications.ts";

export const COOLDOWN_MS = 30_000;
export const MAX_AGE_MS = 5 * 60_000;
/** Distinct URLs kept at most; the oldest entry goes first. */
const MAX_ENTRIES = 1_000;

type LocalSet = ReturnType<typeof createLocalJWKSet>;
interface Entry {
  keys?: LocalSet;
  fetchedAt: number;
  pending?: Promise<LocalSet>;
}

export interface ClientKeySets {
  /** The key resolver for `app`'s assertions, or undefined when it registered no keys. */
  keysOf(app: Application): JWTVerifyGetKey | undefined;
}

export function createClientKeySets(deps: { clock: Clock; fetchJson: (url: string) => Promise<unknown> }): ClientKeySets {
  const entries = new Map<string, Entry>();

  function entryOf(url: string): Entry {
    let entry = entries.get(url);
    if (!entry) {
      if (entries.size >= MAX_ENTRIES) entries.delete(entries.keys().next().value!);
      entry = { fetchedAt: Number.NEGATIVE_INFINITY };
      entries.set(url, entry);
    }
    return entry;
  }

  function reload(url: string, entry: Entry): Promise<LocalSet> {
    // The attempt counts for the cooldown whether or not it succeeds.
    entry.pending ??= (async () => {
      entry.fetchedAt = deps.clock.now().getTime();
      try {
        entry.keys = createLocalJWKSet((await deps.fetchJson(url)) as JSONWebKeySet);
        return entry.keys;
      } finally {
        entry.pending = undefined;
      }
    })();
    return entry.pending;
  }

  function remote(url: string): JWTVerifyGetKey {
    return async (header, token) => {
      const entry = entryOf(url);
      const age = deps.clock.now().getTime() - entry.fetchedAt;
      const keys = entry.keys && age <= MAX_AGE_MS ? entry.keys : await reload(url, entry);
      try {
        return await keys(header, token);
      } catch (err) {
        const fresh = deps.clock.now().getTime() - entry.fetchedAt < COOLDOWN_MS;
        if (!(err instanceof joseErrors.JWKSNoMatchingKey) || fresh) throw err;
        return (await reload(url, entry))(header, token);
      }
    };
  }

  return {
    keysOf(app) {
      if (app.jwks) return createLocalJWKSet(app.jwks as JSONWebKeySet);
      if (app.jwksUri) return remote(app.jwksUri);
      return undefined;
    },
  };
}
