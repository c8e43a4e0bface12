/**
 * Which signing key does what at a given moment: pure arithmetic over the ring's timestamps, so
 * every instance reading the same rows with the same clock agrees without talking to the others.
 *
 * A rotation inserts a key published at once and activated `delay` later (server/keys/rotation.ts).
 * - Published (in the JWKS, accepted when verifying): from `publishAt` until retired.
 * - Signing: the key activated last, among those whose `activateAt` has come.
 * - Retired: once the next key has signed for longer than any token of this purpose lives, plus a
 *   minute for clocks that disagree; no token it signed can still be valid, so it is deleted.
 */
export interface KeyTimes {
  kid: string;
  publishAtMs: number;
  activateAtMs: number;
}

/** How long clients may cache the JWKS (its Cache-Control max-age): a new key is published at least this long before it signs. */
export const JWKS_MAX_AGE_SECONDS = 300;

/**
 * The shortest delay between publishing a key and signing with it: every instance has read it
 * (they read the keys every `refreshSeconds`) and every client's cached JWKS has expired, and never
 * under the 10 minutes the contracts promise (X-ID-KEY-1, X-RB-11).
 */
export const minimumActivationDelaySeconds = (refreshSeconds: number) => Math.max(600, refreshSeconds + JWKS_MAX_AGE_SECONDS);

/** Instances' clocks may disagree by this much; a retired key outlives its last token by it. */
export const CLOCK_SKEW_MS = 60_000;

export interface KeyState {
  kid: string;
  state: "pending" | "signing" | "retiring" | "retired";
  publishAtMs: number;
  activateAtMs: number;
  /** When the key stops being published; undefined while no later key has been activated or scheduled. */
  retireAtMs: number | undefined;
  published: boolean;
}

const order = (a: KeyTimes, b: KeyTimes) => a.activateAtMs - b.activateAtMs || (a.kid < b.kid ? -1 : a.kid > b.kid ? 1 : 0);

export function keySchedule(keys: readonly KeyTimes[], nowMs: number, maxTokenLifetimeMs: number): KeyState[] {
  const sorted = [...keys].sort(order);
  const active = sorted.filter((k) => k.activateAtMs <= nowMs);
  const signing = active[active.length - 1];
  return sorted.map((key, i) => {
    const next = sorted.slice(i + 1).find((k) => k.activateAtMs > key.activateAtMs);
    const retireAtMs = next ? next.activateAtMs + maxTokenLifetimeMs + CLOCK_SKEW_MS : undefined;
    const retired = retireAtMs !== undefined && nowMs >= retireAtMs;
    const state = key === signing ? "signing" : key.activateAtMs > nowMs ? "pending" : retired ? "retired" : "retiring";
    return { ...key, state, retireAtMs, published: !retired && key.publishAtMs <= nowMs };
  });
}
