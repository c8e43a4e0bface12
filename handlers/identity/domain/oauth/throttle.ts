/**
 * Brute-force protection of password sign-in (X-ID-AZ-3): failures are counted per account and
 * per client address in a sliding window, in the database so every instance agrees. A locked key
 * refuses before any password hash is computed, so a locked attacker costs us nothing.
 */
import type { Clock } from "../../../../server/clock.ts";
import type { OAuthQueries } from "../../storage/oauth-queries.ts";

export interface ThrottleLimits {
  perAccount: number;
  perAddress: number;
  windowSeconds: number;
}

export interface Locked {
  what: "account" | "address";
  retryAfterSeconds: number;
}

export function createThrottle(q: OAuthQueries, clock: Clock, limits: ThrottleLimits) {
  const accountKey = (email: string) => `account:${email.trim().toLowerCase()}`;
  const addressKey = (ip: string) => `address:${ip}`;

  async function lockOf(key: string, limit: number, what: Locked["what"]): Promise<Locked | undefined> {
    const now = clock.now().getTime();
    const since = new Date(now - limits.windowSeconds * 1000).toISOString();
    if ((await q.countFailures(key, since)) < limit) return undefined;
    const oldest = Date.parse((await q.oldestFailure(key, since)) ?? new Date(now).toISOString());
    return { what, retryAfterSeconds: Math.max(1, Math.ceil((oldest + limits.windowSeconds * 1000 - now) / 1000)) };
  }

  return {
    /** Whether password sign-in is locked for this account or address, and until when. */
    async check(email: string, ip: string): Promise<Locked | undefined> {
      return (await lockOf(accountKey(email), limits.perAccount, "account")) ?? (await lockOf(addressKey(ip), limits.perAddress, "address"));
    },
    async recordFailure(email: string, ip: string): Promise<void> {
      await q.recordFailure([accountKey(email), addressKey(ip)], clock.now().toISOString());
    },
    /** A successful sign-in clears the account's count (not the address's: one good password must not unlock a spraying address). */
    async recordSuccess(email: string): Promise<void> {
      await q.clearFailures(accountKey(email));
    },
  };
}

export type Throttle = ReturnType<typeof createThrottle>;
