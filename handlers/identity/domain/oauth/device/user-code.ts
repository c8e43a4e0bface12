/**
 * User codes of the device grant (X-ID-DEV-2, RFC 8628 §6.1): 8 characters of a base-20
 * alphabet without vowels (no words) and without digits (nothing to confuse with letters), shown
 * as `XXXX-XXXX`, about 34 bits. What is stored and looked up is the hash of the normalised code,
 * so the case, the dash and spaces the user types do not matter.
 */
import { randomInt } from "node:crypto";
import { sha256Hex } from "../../../../../server/security/tokens.ts";

export const USER_CODE_ALPHABET = "BCDFGHJKLMNPQRSTVWXZ";
const LENGTH = 8;

/** A new user code, `XXXX-XXXX` (each character uniformly chosen: randomInt has no modulo bias). */
export function newUserCode(): string {
  let code = "";
  for (let i = 0; i < LENGTH; i++) code += USER_CODE_ALPHABET[randomInt(USER_CODE_ALPHABET.length)];
  return formatUserCode(code);
}

/** The code as typed without case, dashes or spaces; undefined when it cannot be a user code. */
export function normaliseUserCode(typed: string): string | undefined {
  const code = typed.replace(/[\s-]/g, "").toUpperCase();
  if (code.length !== LENGTH || [...code].some((c) => !USER_CODE_ALPHABET.includes(c))) return undefined;
  return code;
}

/** A normalised code as the user sees it, `XXXX-XXXX`. */
export const formatUserCode = (normalised: string): string => `${normalised.slice(0, 4)}-${normalised.slice(4)}`;

/** The key a user code is stored and looked up by. */
export const userCodeKey = (normalised: string): string => sha256Hex(`user_code:${normalised}`);
