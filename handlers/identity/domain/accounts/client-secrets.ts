/**
 * Client secrets (X-ID-APP-2): 256 random bits, shown once, stored as HMAC-SHA256 under a server
 * key (ADR 0003). A keyed hash is enough for a high-entropy secret (there is nothing to brute-force),
 * and the token endpoint checks one on every client authentication: a password KDF, slow on purpose,
 * would be paid on each token request for no gain.
 */
import { createHmac, createSecretKey, type KeyObject, randomBytes, timingSafeEqual } from "node:crypto";

/** `cs_` and 43 base64url characters (32 random bytes). */
export const newClientSecret = (): string => `cs_${randomBytes(32).toString("base64url")}`;

/**
 * The server's client-secret key as a KeyObject, made once. Node 24's createHmac first asks whether
 * its key is a KeyObject or a CryptoKey by catching two thrown TypeErrors, so a Buffer key makes every
 * HMAC several times dearer, on every token request (bench/results/2026-11-23-token-node24.md).
 */
export const clientSecretHmacKey = (key: Buffer): KeyObject => createSecretKey(key);

/** The stored form: lowercase hex HMAC-SHA256 keyed with the server's client-secret key. */
export const hashClientSecret = (key: KeyObject, secret: string): string => createHmac("sha256", key).update(secret, "utf8").digest("hex");

/**
 * Whether `secret` matches one of the stored hashes. Compares every candidate in constant time and
 * never stops early, so neither the position of a match nor a near-miss shows in the timing.
 */
export function secretMatchesAny(key: KeyObject, secret: string, storedHashes: string[]): boolean {
  const presented = Buffer.from(hashClientSecret(key, secret), "hex");
  let match = false;
  for (const stored of storedHashes) {
    const candidate = Buffer.from(stored, "hex");
    if (candidate.length === presented.length && timingSafeEqual(candidate, presented)) match = true;
  }
  return match;
}
