/**
 * RFC 7009: revoking a refresh token revokes its family and the access tokens issued from it; an
 * access token is revoked alone. Unknown or inactive: nothing to do (still 200). Another client's
 * token: `invalid_request`, and nothing is revoked. ID tokens: `unsupported_token_type`.
 */
import type { Clock } from "../../../../server/clock.ts";
import type { KeyRing } from "../../../../server/keys/ring.ts";
import type { Application } from "../../storage/applications.ts";
import type { GrantStore } from "../../storage/grants.ts";
import { invalidRequest, OAuthError } from "./errors.ts";
import { decodeHeader, decodePayload, type TokenLookup } from "./token-lookup.ts";

export function createRevocation(deps: { grants: GrantStore; clock: Clock; keys: KeyRing; lookup: TokenLookup }) {
  const { grants, clock, keys, lookup } = deps;

  /** An ID token is a JWT with `typ: JWT` signed by us; access tokens are `at+jwt`. */
  function isIdToken(token: string): boolean {
    const header = decodeHeader(token);
    return header?.typ === "JWT" && typeof header.kid === "string" && keys.knows(header.kid);
  }

  return async function revoke(app: Application, token: string): Promise<void> {
    if (isIdToken(token)) throw new OAuthError("unsupported_token_type", "Only access and refresh tokens can be revoked.");
    const found = await lookup(token, app);
    if (!found) return;
    if (!found.ownedBy) throw invalidRequest("The token was issued to another client.");
    if (found.kind === "refresh") {
      await grants.revokeGrant(found.grant.id, clock.now().toISOString());
      return;
    }
    const exp = decodePayload(token)?.exp;
    await grants.revokeAccessToken(
      found.principal.jti,
      new Date(typeof exp === "number" ? exp * 1000 : clock.now().getTime() + 3600_000).toISOString(),
    );
  };
}

export type Revocation = ReturnType<typeof createRevocation>;
