/**
 * Retry schedules as policy objects: the engine asks the policy of a delivery's endpoint, after each
 * failed automatic attempt, how long to wait before the next one, and a policy must eventually say
 * "no more" (nothing is retried forever). Identity uses a fixed delay (seed §6: wait
 * `retryDelaySeconds`, up to `maxRetries` retries); email uses exponential backoff with jitter.
 */

export interface RetryPolicy {
  /**
   * Delay in milliseconds before the attempt after failed attempt number `failedAttempt` (1 = the
   * first attempt), or null when no retry remains: the delivery's final state is then `failed`.
   */
  nextDelayMs(failedAttempt: number): number | null;
}

/** Fixed delay: attempt 1, then up to `maxRetries` retries, each `delaySeconds` after the previous failure. */
export function fixedDelayPolicy(options: { delaySeconds: number; maxRetries: number }): RetryPolicy {
  const { delaySeconds, maxRetries } = options;
  if (!(delaySeconds >= 0) || !Number.isInteger(maxRetries) || maxRetries < 0)
    throw new RangeError("fixedDelayPolicy: bad delay or retry count");
  return { nextDelayMs: (failedAttempt) => (failedAttempt <= maxRetries ? delaySeconds * 1000 : null) };
}

/**
 * Exponential backoff with "full jitter" (a random delay between 0 and the capped exponential
 * step, as AWS's backoff analysis recommends so that failing receivers are not hit in lockstep),
 * never below `minMs`. `random` is injectable so tests get a fixed schedule.
 */
export function exponentialBackoffPolicy(options: {
  baseMs: number;
  maxMs: number;
  maxRetries: number;
  minMs?: number;
  factor?: number;
  random?: () => number;
}): RetryPolicy {
  const { baseMs, maxMs, maxRetries, minMs = 0, factor = 2, random = Math.random } = options;
  if (!(baseMs > 0) || !(maxMs >= baseMs) || !Number.isInteger(maxRetries) || maxRetries < 0)
    throw new RangeError("exponentialBackoffPolicy: bad options");
  return {
    nextDelayMs(failedAttempt) {
      if (failedAttempt > maxRetries) return null;
      const step = Math.min(maxMs, baseMs * factor ** (failedAttempt - 1));
      return Math.max(minMs, Math.round(step * random()));
    },
  };
}

/** A policy that never retries (test events, manual redeliveries). */
export const noRetryPolicy: RetryPolicy = { nextDelayMs: () => null };

/**
 * A fixed exponential schedule with a little jitter (email, X-EM): attempt 1 at once, then the
 * delay before attempt n (n ≥ 2) is `baseMs × factor^(n−2)`, spread by ±`jitter` (a fraction) so
 * that many deliveries failing together do not retry in lockstep, for at most `maxAttempts`.
 */
export function jitteredExponentialPolicy(options: {
  baseMs: number;
  factor: number;
  maxAttempts: number;
  jitter: number;
  random?: () => number;
}): RetryPolicy {
  const { baseMs, factor, maxAttempts, jitter, random = Math.random } = options;
  if (!(baseMs > 0) || !(factor >= 1) || !Number.isInteger(maxAttempts) || maxAttempts < 1 || !(jitter >= 0 && jitter < 1))
    throw new RangeError("jitteredExponentialPolicy: bad options");
  return {
    nextDelayMs(failedAttempt) {
      if (failedAttempt >= maxAttempts) return null;
      const step = baseMs * factor ** (failedAttempt - 1);
      return Math.round(step * (1 - jitter + 2 * jitter * random()));
    },
  };
}
