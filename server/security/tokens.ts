/** Small helpers for opaque secrets: generation, hashing for storage, constant-time comparison. */
import { createHash, timingSafeEqual } from "node:crypto";
import { pooledRandomBytes } from "./random.ts";

/** A random secret of `bytes` bytes (default 32: 256 bits), base64url. */
export const randomSecret = (bytes = 32): string => pooledRandomBytes(bytes).toString("base64url");

/** SHA-256 (hex) of a high-entropy secret, for storage: the secret itself is never stored. */
export const sha256Hex = (value: string): string => createHash("sha256").update(value).digest("hex");

/**
 * A one-time secret stored under a key that keeps its index append-only (authorization codes,
 * refresh tokens): `<prefix><12 hex digits of Unix ms>.<random>`.
 *
 * Why: such a secret is stored as a hash and found by it, and a hash is random, so every insert
 * landed on a random page of its unique index and every lookup read one: once that index outgrows
 * the cache (a million rows), each exchange costs page reads and writes a smaller table does not.
 * The key of a secret made here begins with its creation time instead, as a UUIDv7 does, then
 * holds the first 208 bits of its SHA-256: inserts land at the index's right edge, the codes and
 * tokens exchanged soon after they are made are found in its hot pages, and the key still tells
 * nothing about the secret (the issue time it shows is stored beside it anyway). The random part
 * keeps all 256 bits of `randomSecret`.
 */
export const timeOrderedSecret = (prefix: string, nowMs: number): string =>
  `${prefix}${nowMs.toString(16).padStart(12, "0")}.${randomSecret()}`;

/**
 * How new one-time secrets are made and keyed (IDENTITY_TOKEN_KEYS): `hashed`, `<prefix><random>`
 * under its whole SHA-256, which every version finds; or `time-ordered` (`timeOrderedSecret`), which
 * only versions that have `secretStorageKey` find. Both shapes are always found; only what is made
 * new differs, so that instances of an earlier version, during a rolling upgrade or after a roll
 * back, still find what this one issues until the operator switches.
 */
export type SecretKeys = "hashed" | "time-ordered";

export const newOneTimeSecret = (keys: SecretKeys, prefix: string, nowMs: number): string =>
  keys === "time-ordered" ? timeOrderedSecret(prefix, nowMs) : `${prefix}${randomSecret()}`;

const TIME_ORDERED = /^[0-9a-f]{12}\./;

/**
 * The key a secret is stored and looked up by: for a `timeOrderedSecret`, its time then 52 hex digits
 * of its SHA-256; for a secret made before those (any other shape), its whole SHA-256 hex, as
 * stored then. Both are 64 characters.
 */
export function secretStorageKey(secret: string, prefix = ""): string {
  const hash = sha256Hex(secret);
  if (!secret.startsWith(prefix) || !TIME_ORDERED.test(secret.slice(prefix.length, prefix.length + 13))) return hash;
  return secret.slice(prefix.length, prefix.length + 12) + hash.slice(0, 52);
}

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
