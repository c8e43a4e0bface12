/**
 * Password sign-in throttling: one policy for every place that checks a password (identity's
 * hosted login and social link form, X-ID-AZ-3 and X-ID-AZ-4; repository's `POST /auth/login`,
 * X-RB-6 and X-RB-9). It follows OWASP's Authentication Cheat Sheet: a lockout keyed on the
 * account alone lets anyone lock anyone out (denial of service), so
 *
 * 1. **account and address**: `accountAddressMaxFailures` failures for one account from one client
 *    address within the window refuse that address for that account (429) until the oldest
 *    leaves the window. Only the guesser is locked out, never the owner elsewhere (what Auth0's
 *    brute-force protection does);
 * 2. **address**: `addressMaxFailures` failures from one client address across all accounts refuse
 *    it (password spraying);
 * 3. **account, across addresses**: once an account has `backoffAfterFailures` failures in the
 *    window, an attempt must wait 1 s, 2 s, 4 s … (doubling with each further failure, at most
 *    `backoffMaxSeconds`) after the account's latest failure. A guesser spread over many addresses
 *    is slowed to about one guess per `backoffMaxSeconds`, and the owner is slowed, never locked.
 *    Addresses the account signed in from within `knownAddressSeconds` are not slowed at all (as
 *    Okta exempts known devices from lockout), so a guesser who keeps the account slowed cannot
 *    keep its owner out by winning the race for each free moment.
 *
 * An attempt is recorded as a failure *before* the password is checked and taken back when it
 * succeeds, in a store transaction serialised with every other attempt on the same account or
 * address: concurrent guesses see each other, so a burst cannot slip past a limit, and a refused
 * attempt costs no password hash. Refused attempts are not counted (they guess nothing).
 */
import ipaddr from "ipaddr.js";
import type { Tx } from "../storage/transaction.ts";
import type { Clock } from "../clock.ts";

/** The deployment's policy: the LOGIN_* variables (server/config.ts `signInPolicyOf`). */
export interface SignInPolicy {
  windowSeconds: number;
  accountAddressMaxFailures: number;
  addressMaxFailures: number;
  backoffAfterFailures: number;
  backoffMaxSeconds: number;
  knownAddressSeconds: number;
}

/** Why an attempt was refused: locked for this account from this address, locked for this address, or the account is slowed down. */
export type RefusalReason = "account-address" | "address" | "account";

export interface SignInRefusal {
  reason: RefusalReason;
  /** Whole seconds until an attempt would be allowed (the `Retry-After`), at least 1. */
  retryAfterSeconds: number;
}

/** Failures of one key within the window, with the times of the oldest and the newest (ISO). */
export interface FailureStats {
  count: number;
  oldest: string;
  newest: string;
}

export interface ThrottleKeys {
  account: string;
  address: string;
  /** The account at this address: the hard lock's key, and the known-address record's. */
  pair: string;
}

export type Reservation = { refused: SignInRefusal } | { ids: number[] };

/** Where attempts are counted; `knexSignInThrottleStore` and `postgresSignInThrottleStore` (sign-in-throttle-store.ts) are the services'. */
export interface SignInThrottleStore {
  /**
   * In one transaction serialised with every other on `keys.account` or `keys.address`: reads the
   * failures of the three keys since `since` and whether the pair signed in since `knownSince`,
   * asks `decide`, and when it allows, records a failure under each key at `at` (their row ids).
   */
  reserve(
    keys: ThrottleKeys,
    times: { since: string; knownSince: string; at: string },
    decide: (stats: Map<string, FailureStats>, known: boolean) => SignInRefusal | undefined,
  ): Promise<Reservation>;
  /** A success: the reserved rows and every failure of the pair go, and the pair is known from `at`. */
  succeeded(ids: number[], keys: ThrottleKeys, at: string): Promise<void>;
  /**
   * Forgets the failures counted against the account across addresses (its `account` key), in
   * `tx` when given: what slows the account down (rule 3) ends; each address's own lock (rule 1)
   * and count (rule 2) stay. Identity's password reset calls it (X-ID-RST-5).
   */
  forgetAccount(account: string, tx?: Tx): Promise<void>;
  /** Optional housekeeping where no retention job runs: rows no rule reads any more. */
  prune?(failuresBefore: string, knownBefore: string): Promise<void>;
}

/**
 * The address a limit counts: an IPv4 address as itself (also when it arrives IPv4-mapped), an
 * IPv6 address by its /64, since one subscriber usually holds a whole /64 and could otherwise
 * take a fresh address for every guess.
 */
export function addressBucket(address: string): string {
  if (!ipaddr.isValid(address)) return address;
  let parsed = ipaddr.parse(address);
  if (parsed.kind() === "ipv6" && (parsed as ipaddr.IPv6).isIPv4MappedAddress()) parsed = (parsed as ipaddr.IPv6).toIPv4Address();
  if (parsed.kind() === "ipv4") return parsed.toString();
  const parts = (parsed as ipaddr.IPv6).parts.slice(0, 4);
  return `${new ipaddr.IPv6([...parts, 0, 0, 0, 0]).toString()}/64`;
}

export function throttleKeys(account: string, address: string): ThrottleKeys {
  const a = account.trim().toLowerCase();
  const n = addressBucket(address);
  return { account: `account:${a}`, address: `address:${n}`, pair: `pair:${n}|${a}` };
}

const secondsUntil = (fromIso: string, plusSeconds: number, nowMs: number) =>
  Math.max(1, Math.ceil((Date.parse(fromIso) + plusSeconds * 1000 - nowMs) / 1000));

/** The delay an account's failures ask of an attempt from an address it does not know: 0 below the threshold, then 1, 2, 4 … seconds up to the cap. */
export function backoffSeconds(policy: SignInPolicy, accountFailures: number): number {
  if (accountFailures < policy.backoffAfterFailures) return 0;
  const exponent = Math.min(accountFailures - policy.backoffAfterFailures, 30);
  return Math.min(policy.backoffMaxSeconds, 2 ** exponent);
}

/** The rule itself, without storage: refuse (and until when) or allow. */
export function decide(
  policy: SignInPolicy,
  keys: ThrottleKeys,
  nowMs: number,
  stats: Map<string, FailureStats>,
  known: boolean,
): SignInRefusal | undefined {
  const pair = stats.get(keys.pair);
  if (pair && pair.count >= policy.accountAddressMaxFailures) {
    return { reason: "account-address", retryAfterSeconds: secondsUntil(pair.oldest, policy.windowSeconds, nowMs) };
  }
  const address = stats.get(keys.address);
  if (address && address.count >= policy.addressMaxFailures) {
    return { reason: "address", retryAfterSeconds: secondsUntil(address.oldest, policy.windowSeconds, nowMs) };
  }
  const account = stats.get(keys.account);
  if (account && !known) {
    const delay = backoffSeconds(policy, account.count);
    if (delay > 0 && Date.parse(account.newest) + delay * 1000 > nowMs) {
      return { reason: "account", retryAfterSeconds: secondsUntil(account.newest, delay, nowMs) };
    }
  }
  return undefined;
}

export type AttemptResult<T> = { refused: SignInRefusal } | { refused?: undefined; result: T };

/** How often a recorded failure also prunes old rows, where the store does that itself. */
const PRUNE_EVERY = 50;

export function createSignInThrottle(store: SignInThrottleStore, clock: Clock, policy: SignInPolicy) {
  return {
    policy,
    /**
     * Runs one password check for `account` from `address` under the policy. Refused: `verify`
     * is not called. Otherwise the attempt counts as a failure unless `succeeded(result)`.
     */
    async attempt<T>(
      account: string,
      address: string,
      verify: () => Promise<T>,
      succeeded: (result: T) => boolean,
    ): Promise<AttemptResult<T>> {
      const keys = throttleKeys(account, address);
      const now = clock.now();
      const ago = (seconds: number) => new Date(now.getTime() - seconds * 1000).toISOString();
      const reservation = await store.reserve(
        keys,
        { since: ago(policy.windowSeconds), knownSince: ago(policy.knownAddressSeconds), at: now.toISOString() },
        (stats, known) => decide(policy, keys, now.getTime(), stats, known),
      );
      if ("refused" in reservation) return { refused: reservation.refused };
      const result = await verify();
      if (succeeded(result)) await store.succeeded(reservation.ids, keys, clock.now().toISOString());
      else if (store.prune && Math.random() < 1 / PRUNE_EVERY)
        await store.prune(ago(policy.windowSeconds), ago(policy.knownAddressSeconds));
      return { result };
    },
  };
}

export type SignInThrottle = ReturnType<typeof createSignInThrottle>;
