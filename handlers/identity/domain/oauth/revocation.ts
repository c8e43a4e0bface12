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
import type { Audit, RequestOrigin } from "../audit.ts";
import type { GrantRevoker } from "./grant-revocation.ts";

export function createRevocation(deps: {
  grants: GrantStore;
  clock: Clock;
  keys: KeyRing;
  lookup: TokenLookup;
  revokeGrant: GrantRevoker;
  audit: Audit;
}) {
  const { grants, clock, keys, lookup, revokeGrant, audit } = deps;

  /** An ID token is a JWT with `typ: JWT` signed by us; access tokens are `at+jwt`. */
  function isIdToken(token: string): boolean {
    const header = decodeHeader(token);
    return header?.typ === "JWT" && typeof header.kid === "string" && keys.knows(header.kid);
  }

  return async function revoke(app: Application, token: string, origin?: RequestOrigin): Promise<void> {
    if (isIdToken(token)) throw new OAuthError("unsupported_token_type", "Only access and refresh tokens can be revoked.");
    const found = await lookup(token, app);
    if (!found) return;
    if (!found.ownedBy) throw invalidRequest("The token was issued to another client.");
    if (found.kind === "refresh") {
      await revokeGrant(found.grant, "revocation", origin);
      return;
    }
    const exp = decodePayload(token)?.exp;
    await grants.revokeAccessToken(
      found.principal.jti,
      new Date(typeof exp === "number" ? exp * 1000 : clock.now().getTime() + 3600_000).toISOString(),
    );
    // The revoked-token row is an idempotent insert of its own; its event follows it (a repeat records again, harmlessly).
    await audit.record(undefined, {
      type: "token.revoked",
      actor: { type: "user", id: found.principal.userId },
      userId: found.principal.userId,
      applicationId: app.id,
      origin,
      details: { tokenType: "access_token", reason: "revocation" },
    });
  };
}

export type Revocation = ReturnType<typeof createRevocation>;
