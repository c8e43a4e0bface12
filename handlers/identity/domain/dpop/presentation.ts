/**
 * How an access token is presented to identity's own operations (userinfo, the admin API): RFC
 * 6750 `Authorization: Bearer <token>`, or RFC 9449 `Authorization: DPoP <token>` with a proof
 * of the key the token is bound to (X-ID-DPOP-5). A DPoP-bound token presented as Bearer is
 * refused (§7.1), so a stolen bound token is worthless without its key.
 */
import { DomainError } from "../../../../server/domain/errors.ts";
import { REALM, type AccessTokens, type AdminPrincipal, type Presentation, type UserPrincipal } from "../access-tokens.ts";
import { DPOP_ALGORITHMS, DpopNonceError, DpopProofError, type DpopVerifier } from "./proof.ts";

/** The request as the security handler sees it. `url`: the operation's URL at the issuer. */
export interface PresentedRequest {
  authorization: string | string[] | undefined;
  dpop: string | string[] | undefined;
  method: string;
  url: string;
}

/**
 * RFC 9449 §7.1: a DPoP challenge names the algorithms a proof may use. The problem's `code` stays
 * `invalid_token`, the one code the contract documents for a refused credential; the challenge's
 * `error` names the DPoP cause.
 */
const dpopChallenge = (error: "invalid_token" | "invalid_dpop_proof" | "use_dpop_nonce", detail: string, nonce?: string) =>
  new DomainError("unauthenticated", "invalid_token", detail, {
    challenge: { realm: REALM, error, scheme: "DPoP", algs: DPOP_ALGORITHMS.join(" "), ...(nonce ? { nonce } : {}) },
  });

/** The scheme and token of an Authorization header (token68 syntax), schemes case-insensitive. */
function credentialOf(header: string | string[] | undefined): { scheme: "bearer" | "dpop"; token: string } | undefined {
  if (typeof header !== "string") return undefined;
  const match = /^(Bearer|DPoP)[ ]+([A-Za-z0-9\-._~+/]+=*)\s*$/i.exec(header);
  if (!match) return undefined;
  return { scheme: match[1]!.toLowerCase() as "bearer" | "dpop", token: match[2]! };
}

export function createTokenPresentation(deps: { accessTokens: AccessTokens; proofs: DpopVerifier }) {
  const { accessTokens, proofs } = deps;

  async function present<P>(req: PresentedRequest, authenticate: (token: string | undefined, presented: Presentation) => Promise<P>) {
    const credential = credentialOf(req.authorization);
    if (!credential || credential.scheme === "bearer") {
      return authenticate(credential?.token, (principal) => {
        if (principal.jkt)
          throw dpopChallenge(
            "invalid_token",
            "This access token is bound to a DPoP key: present it as Authorization: DPoP with a DPoP proof.",
          );
      });
    }
    let jkt: string;
    try {
      ({ jkt } = await proofs.verify(req.dpop, { method: req.method, url: req.url, accessToken: credential.token }));
    } catch (err) {
      if (err instanceof DpopNonceError) throw dpopChallenge("use_dpop_nonce", err.message, err.nonce);
      if (err instanceof DpopProofError) throw dpopChallenge("invalid_dpop_proof", err.message);
      throw err;
    }
    try {
      return await authenticate(credential.token, (principal) => {
        if (principal.jkt !== jkt) throw dpopChallenge("invalid_token", "This access token is not bound to the key of the DPoP proof.");
      });
    } catch (err) {
      // The token itself was refused: answered with the DPoP challenge the client used.
      if (err instanceof DomainError && err.challenge && err.challenge.scheme !== "DPoP") throw dpopChallenge("invalid_token", err.message);
      throw err;
    }
  }

  return {
    authenticateUser: (req: PresentedRequest): Promise<UserPrincipal> => present(req, accessTokens.authenticateUser),
    authenticateAdmin: (req: PresentedRequest): Promise<AdminPrincipal> => present(req, accessTokens.authenticateAdmin),
  };
}
