/**
 * The 401 for a token of another issuer (X-RB-13). A page that signs in with the identity service
 * and sends its access token here was told "malformed or its signature is invalid", which reads
 * as a corrupt token; the token is fine, it is just not one of ours. So when a Bearer token fails
 * verification, its header and payload are decoded, unverified, only to choose the message:
 * another `iss`, or a `kid` the token system's key ring has never had, says where our tokens come
 * from. Nothing is verified or trusted here, and the answer echoes nothing of the token; a token
 * that does not decode as a JWT keeps the old message.
 */
import { decodeJwt, decodeProtectedHeader, errors as joseErrors } from "jose";
import type { KeyRing } from "../../../server/keys/ring.ts";

/** What tells our tokens of one system (user or agent) from others without verifying them. */
export interface OwnTokens {
  issuer: string;
  keys: Pick<KeyRing, "knows">;
}

/** Whether `token` is a well-formed JWT of another issuer, or signed with a key this system never had. */
export function isForeignToken(token: string, own: OwnTokens): boolean {
  try {
    const header = decodeProtectedHeader(token);
    const claims = decodeJwt(token);
    return claims.iss !== own.issuer || !own.keys.knows(header.kid);
  } catch {
    return false; // not a JWT at all: malformed, as before
  }
}

/** The token's `iss`, decoded and not verified (undefined when it is not a JWT): only to choose who verifies it. */
export function issuerOf(token: string): string | undefined {
  try {
    const { iss } = decodeJwt(token);
    return typeof iss === "string" ? iss : undefined;
  } catch {
    return undefined;
  }
}

/** The detail of the 401 for a foreign token, by token system: what it is not, and how to get one that is. */
export const FOREIGN_TOKEN_DETAIL = {
  access:
    "The access token is not a user token of this service (another issuer or signing key) and its issuer is not trusted here; sign in with POST /auth/login to get one.",
  agent:
    "The agent token is not an agent token of this service (another issuer or signing key); register the agent with POST /buildagent/register to get one.",
} as const;

/**
 * The foreign-token detail when verifying `token` failed with `err` and the token is foreign, else
 * undefined (the usual detail applies). Only jose's refusals qualify: any other error is a fault of
 * ours and must stay one.
 */
export function foreignTokenDetail(
  err: unknown,
  token: string,
  own: OwnTokens,
  system: keyof typeof FOREIGN_TOKEN_DETAIL,
): string | undefined {
  if (!(err instanceof joseErrors.JOSEError) || !isForeignToken(token, own)) return undefined;
  return FOREIGN_TOKEN_DETAIL[system];
}
