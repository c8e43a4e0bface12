/**
 * The session id relying parties see (X-ID-LOGOUT-6): the `sid` of ID tokens and logout tokens.
 * Derived from the session row's key (the SHA-256 of the cookie's id) by another SHA-256 with its
 * own prefix, so it is stable for the session's life, the same in every token of the session, needs
 * no column of its own, and tells nothing that would rebuild the cookie or the stored hash.
 */
import { sha256Hex } from "../../../../server/security/tokens.ts";

export const sessionSid = (sessionIdHash: string): string => sha256Hex(`oidc-sid:${sessionIdHash}`);
