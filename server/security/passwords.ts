/**
 * Password hashing with scrypt (memory-hard, RFC 7914), built into Node: no native add-on.
 * Stored as `scrypt$N$r$p$salt$hash` (base64url) so parameters can be raised later without
 * breaking existing hashes.
 */
import { randomBytes, scrypt as scryptCb, timingSafeEqual, type ScryptOptions } from "node:crypto";

const scrypt = (password: string, salt: Buffer, keylen: number, options: ScryptOptions) =>
  new Promise<Buffer>((resolve, reject) =>
    scryptCb(password.normalize("NFKC"), salt, keylen, options, (err, key) => (err ? reject(err) : resolve(key))),
  );

/**
 * N=2^15, r=8, p=1: 32 MiB per hash. OWASP's scrypt minimum is N=2^17 with r=8 at p=1 (128 MiB): a
 * deliberate trade of some strength for what each sign-in costs, a parameter change away, since the
 * stored form carries its parameters (docs/adr/0003-scrypt-passwords.md).
 */
const PARAMS = { N: 2 ** 15, r: 8, p: 1 };
const KEY_LENGTH = 32;

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await scrypt(password, salt, KEY_LENGTH, { ...PARAMS, maxmem: 128 * PARAMS.N * PARAMS.r * 2 });
  return ["scrypt", PARAMS.N, PARAMS.r, PARAMS.p, salt.toString("base64url"), key.toString("base64url")].join("$");
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, salt, hash] = stored.split("$");
  if (scheme !== "scrypt" || !salt || !hash) return false;
  const expected = Buffer.from(hash, "base64url");
  const N = Number(n),
    R = Number(r),
    P = Number(p);
  const key = await scrypt(password, Buffer.from(salt, "base64url"), expected.length, { N, r: R, p: P, maxmem: 128 * N * R * 2 });
  return timingSafeEqual(key, expected);
}

/** A hash of a random password: verifying against it costs what a real check costs, so unknown accounts answer as slowly as wrong passwords. */
export const DUMMY_HASH = await hashPassword(randomBytes(16).toString("hex"));
