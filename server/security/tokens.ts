/** Small helpers for opaque secrets: generation, hashing for storage, constant-time comparison. */
import { createHash, timingSafeEqual } from "node:crypto";
import { pooledRandomBytes } from "./random.ts";

/** A random secret of `bytes` bytes (default 32: 256 bits), base64url. */
export const randomSecret = (bytes = 32): string => pooledRandomBytes(bytes).toString("base64url");

/** SHA-256 (hex) of a high-entropy secret, for storage: the secret itself is never stored. */
export const sha256Hex = (value: string): string => createHash("sha256").update(value).digest("hex");

/** Constant-time string equality (compares SHA-256 digests, so lengths do not leak). */
export function safeEqual(a: string, b: string): boolean {
  return timingSafeEqual(createHash("sha256").update(a).digest(), createHash("sha256").update(b).digest());
}

/** The credential of an `Authorization: Bearer <token>` header, or undefined (RFC 6750 §2.1). */
export function bearerToken(header: string | string[] | undefined): string | undefined {
  if (typeof header !== "string") return undefined;
  const match = /^Bearer[ ]+([A-Za-z0-9\-._~+/]+=*)\s*$/i.exec(header);
  return match?.[1];
}
