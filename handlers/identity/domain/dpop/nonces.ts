/**
 * DPoP server nonces (RFC 9449 §8, X-ID-DPOP-7): when the deployment requires them, a proof must
 * carry a nonce the server handed out. Nonces are derived, not stored: the HMAC of the current
 * rotation slot of the injected clock under a key every instance shares, so any instance accepts
 * any instance's nonce and a nonce rotates when the slot turns. The previous slot's nonce is
 * still accepted, so a client that fetched one just before the turn is not refused.
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import type { Clock } from "../../../../server/clock.ts";

export interface DpopNonces {
  /** The nonce to hand out now (`DPoP-Nonce`). */
  current(): string;
  /** Whether `nonce` is the current or the previous slot's (constant-time). */
  accepts(nonce: unknown): boolean;
}

export function createDpopNonces(deps: { clock: Clock; secret: Buffer; rotateSeconds: number }): DpopNonces {
  const key = createHmac("sha256", deps.secret).update("dpop-nonce").digest();
  const slot = () => Math.floor(deps.clock.now().getTime() / 1000 / deps.rotateSeconds);
  const nonceOf = (n: number) => createHmac("sha256", key).update(String(n)).digest("base64url");
  const same = (a: string, b: string) => a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));
  return {
    current: () => nonceOf(slot()),
    accepts(nonce) {
      if (typeof nonce !== "string") return false;
      const now = slot();
      // Both compared, always: the time taken says nothing about which one matched.
      const current = same(nonce, nonceOf(now));
      const previous = same(nonce, nonceOf(now - 1));
      return current || previous;
    },
  };
}
