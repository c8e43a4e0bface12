/**
 * Recovery codes (X-ID-MFA-3): ten per enrolment, each 10 characters of a 32-letter alphabet
 * (50 bits) written `xxxxx-xxxxx`, shown once and stored as SHA-256 only. A code is compared by
 * its hash, looked up by the database's index (no timing of a string comparison to observe), and
 * used by one conditional update.
 */
import { pooledRandomBytes } from "../../../../server/security/random.ts";
import { sha256Hex } from "../../../../server/security/tokens.ts";

export const RECOVERY_CODE_COUNT = 10;
/** Crockford's Base32 without the letters people confuse (I, L, O, U). */
const ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz";

export function newRecoveryCode(): string {
  const bytes = pooledRandomBytes(10);
  const chars = [...bytes].map((b) => ALPHABET[b & 31]).join("");
  return `${chars.slice(0, 5)}-${chars.slice(5)}`;
}

/** The form a code is hashed in: lower case, without the dash or spaces a person may type. */
export const normalizeRecoveryCode = (input: string): string => input.toLowerCase().replace(/[\s-]/g, "");

export const recoveryCodeHash = (input: string): string => sha256Hex(`recovery:${normalizeRecoveryCode(input)}`);

/** A typed recovery code (as opposed to a six-digit one-time code). */
export const looksLikeRecoveryCode = (input: string): boolean => /^[0-9a-z]{10}$/.test(normalizeRecoveryCode(input));
