/** PKCE (RFC 7636): challenge and verifier formats, and the check at the token endpoint. */
import { createHash } from "node:crypto";
import { safeEqual } from "../../../../server/security/tokens.ts";

/** 43-128 characters of the unreserved set (RFC 7636 §4.1, §4.2). */
const PKCE_VALUE = /^[A-Za-z0-9\-._~]{43,128}$/;

export type PkceMethod = "S256" | "plain";

export const isValidChallenge = (challenge: string): boolean => PKCE_VALUE.test(challenge);
export const isValidVerifier = (verifier: string): boolean => PKCE_VALUE.test(verifier);

/** `code_challenge_method`: S256 by default (RFC 7636 §4.3); undefined when not one we accept. */
export function parseMethod(method: string | undefined): PkceMethod | undefined {
  if (method === undefined) return "S256";
  return method === "S256" || method === "plain" ? method : undefined;
}

/** S256: BASE64URL(SHA256(ASCII(verifier))) (RFC 7636 §4.2). */
export const s256 = (verifier: string): string => createHash("sha256").update(verifier, "ascii").digest("base64url");

/** Whether `verifier` matches the stored challenge, compared in constant time. */
export function verifierMatches(verifier: string, challenge: string, method: PkceMethod): boolean {
  return safeEqual(method === "S256" ? s256(verifier) : verifier, challenge);
}
