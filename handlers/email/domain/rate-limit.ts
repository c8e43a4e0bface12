/**
 * Sends per second per API key (X-EM-19), per instance: a token bucket refilled continuously, so a
 * burst up to the limit passes and the next request learns exactly when to come back. Off (0) by
 * default; a deployment behind several instances divides its intended limit by their number.
 */
import type { Clock } from "../../../server/clock.ts";
import { HttpProblem } from "../../../server/http/problem.ts";

export function createRateLimiter(perSecond: number, clock: Clock) {
  const buckets = new Map<string, { tokens: number; at: number }>();
  return {
    /** Takes one token for `key`, or throws 429 with Retry-After and the RateLimit-* headers. */
    take(key: string): Record<string, string> {
      if (perSecond <= 0) return {};
      const now = clock.now().getTime();
      const bucket = buckets.get(key) ?? { tokens: perSecond, at: now };
      bucket.tokens = Math.min(perSecond, bucket.tokens + ((now - bucket.at) / 1000) * perSecond);
      bucket.at = now;
      buckets.set(key, bucket);
      if (buckets.size > 100_000) buckets.clear();
      if (bucket.tokens < 1) {
        const wait = Math.max(1, Math.ceil((1 - bucket.tokens) / perSecond));
        throw new HttpProblem(429, "rate_limited", `This API key may send ${perSecond} messages per second; retry after ${wait} s.`, {
          headers: { "Retry-After": String(wait), "RateLimit-Limit": String(perSecond), "RateLimit-Remaining": "0", "RateLimit-Reset": String(wait) },
        });
      }
      bucket.tokens -= 1;
      return { "RateLimit-Limit": String(perSecond), "RateLimit-Remaining": String(Math.floor(bucket.tokens)), "RateLimit-Reset": "1" };
    },
  };
}

export type RateLimiter = ReturnType<typeof createRateLimiter>;
