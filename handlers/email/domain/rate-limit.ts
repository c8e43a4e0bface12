/**
 * Sends per second per API key (X-EM-19), per instance: a token bucket refilled continuously, so a
 * burst up to the limit passes and the next request learns exactly when to come back. 100 by
 * default (EMAIL_RATE_LIMIT_PER_SECOND; 0 turns it off); a deployment behind several instances
 * divides its intended limit by their number.
 */
import type { Clock } from "../../../server/clock.ts";
import { rateLimited } from "../../../server/domain/errors.ts";

export function createRateLimiter(perSecond: number, clock: Clock) {
  const buckets = new Map<string, { tokens: number; at: number }>();
  return {
    /** Takes one token for `key`, or throws rate_limited with the wait and the exhausted budget. */
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
        throw rateLimited(`This API key may send ${perSecond} messages per second; retry after ${wait} s.`, wait, perSecond);
      }
      bucket.tokens -= 1;
      return { "RateLimit-Limit": String(perSecond), "RateLimit-Remaining": String(Math.floor(bucket.tokens)), "RateLimit-Reset": "1" };
    },
  };
}

export type RateLimiter = ReturnType<typeof createRateLimiter>;
