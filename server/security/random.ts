/**
 * Cryptographically secure random bytes, drawn from a pooled buffer: one `randomFillSync` per
 * 4 KiB instead of one per call, so the token endpoint pays the call's fixed cost once per pool, not
 * three times per exchange (refresh token, token id, sealing nonce). The same CSPRNG output as `randomBytes`;
 * each byte is copied out once and never handed out again (Node's own `randomUUID` pools the same way).
 */
import { randomBytes, randomFillSync } from "node:crypto";

const POOL_BYTES = 4096;
const pool = Buffer.allocUnsafe(POOL_BYTES);
let offset = POOL_BYTES;

export function pooledRandomBytes(size: number): Buffer {
  if (size > POOL_BYTES / 8) return randomBytes(size);
  if (offset + size > POOL_BYTES) {
    randomFillSync(pool);
    offset = 0;
  }
  const bytes = Buffer.from(pool.subarray(offset, offset + size));
  offset += size;
  return bytes;
}
