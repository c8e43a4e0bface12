/**
 * The sign-in throttle's rule without storage (server/security/sign-in-throttle.ts): which
 * address a limit counts, the delay table, and the order of the three limits. The whole policy
 * over HTTP, on SQLite and PostgreSQL, is in conformance (X-ID-AZ-3/4, X-RB-6/9).
 */
import { describe, expect, it } from "vitest";
import {
  addressBucket,
  backoffSeconds,
  decide,
  throttleKeys,
  type FailureStats,
  type SignInPolicy,
} from "../../server/security/sign-in-throttle.ts";

const policy: SignInPolicy = {
  windowSeconds: 900,
  accountAddressMaxFailures: 10,
  addressMaxFailures: 100,
  backoffAfterFailures: 10,
  backoffMaxSeconds: 60,
  knownAddressSeconds: 30 * 86400,
};
const now = Date.parse("2026-11-23T12:00:00.000Z");
const at = (secondsAgo: number) => new Date(now - secondsAgo * 1000).toISOString();
const stats = (count: number, oldestAgo: number, newestAgo: number): FailureStats => ({
  count,
  oldest: at(oldestAgo),
  newest: at(newestAgo),
});

describe("addressBucket", () => {
  it.each([
    ["203.0.113.7", "203.0.113.7"],
    ["::ffff:203.0.113.7", "203.0.113.7"], // IPv4-mapped: the same client as plain IPv4
    ["2001:db8:1:2:aaaa:bbbb:cccc:dddd", "2001:db8:1:2::/64"],
    ["2001:db8:1:2::1", "2001:db8:1:2::/64"], // the same /64: one subscriber, one budget
    ["2001:db8:1:3::1", "2001:db8:1:3::/64"],
    ["::1", "::/64"],
    ["not an address", "not an address"],
  ])("%s counts as %s", (address, bucket) => {
    expect(addressBucket(address)).toBe(bucket);
  });

  it("keys the account case-insensitively and the pair by both", () => {
    expect(throttleKeys(" Ada@Example.COM ", "::ffff:10.0.0.1")).toEqual({
      account: "account:ada@example.com",
      address: "address:10.0.0.1",
      pair: "pair:10.0.0.1|ada@example.com",
    });
  });
});

describe("backoffSeconds", () => {
  it("is 0 below the threshold, then doubles from 1 s up to the cap", () => {
    expect([0, 9, 10, 11, 12, 13, 14, 15, 16, 17, 1000].map((n) => backoffSeconds(policy, n))).toEqual([
      0, 0, 1, 2, 4, 8, 16, 32, 60, 60, 60,
    ]);
  });
});

describe("decide", () => {
  const keys = throttleKeys("ada@example.com", "198.51.100.1");
  const table = (entries: Array<[string, FailureStats]>) => new Map(entries);

  it("allows with no failures", () => {
    expect(decide(policy, keys, now, table([]), false)).toBeUndefined();
  });

  it("refuses the account at this address once it reached its limit, until the oldest failure leaves the window", () => {
    expect(decide(policy, keys, now, table([[keys.pair, stats(10, 300, 5)]]), true)).toEqual({
      reason: "account-address",
      retryAfterSeconds: 600,
    });
    expect(decide(policy, keys, now, table([[keys.pair, stats(9, 300, 5)]]), true)).toBeUndefined();
  });

  it("refuses the address across accounts at its own limit", () => {
    expect(decide(policy, keys, now, table([[keys.address, stats(100, 899, 1)]]), true)).toEqual({
      reason: "address",
      retryAfterSeconds: 1,
    });
  });

  it("slows the account from unknown addresses by its delay since the latest failure, and never a known address", () => {
    const many = table([[keys.account, stats(13, 600, 3)]]); // 13 failures: 8 s, the latest 3 s ago
    expect(decide(policy, keys, now, many, false)).toEqual({ reason: "account", retryAfterSeconds: 5 });
    expect(decide(policy, keys, now, many, true)).toBeUndefined();
    expect(decide(policy, keys, now, table([[keys.account, stats(13, 600, 8)]]), false)).toBeUndefined(); // waited enough
  });

  it("names the hard lock before the slowdown", () => {
    const both = table([
      [keys.pair, stats(10, 100, 1)],
      [keys.account, stats(50, 100, 1)],
    ]);
    expect(decide(policy, keys, now, both, false)?.reason).toBe("account-address");
  });
});
