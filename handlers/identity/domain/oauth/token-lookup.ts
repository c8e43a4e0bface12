/**
 * What a presented token is, for revocation (RFC 7009) and introspection (RFC 7662): a refresh token
 * (`rt_…`, found by its hash) or an access token (a JWT we signed). Undefined when not ours.
 */
import type { Clock } from "../../../../server/clock.ts";
import { secretStorageKey } from "../../../../server/security/tokens.ts";
import { REFRESH_TOKEN_PREFIX } from "./grants/issue.ts";
import type { Application } from "../../storage/applications.ts";
import type { GrantStore } from "../../storage/grants.ts";
import type { AccessTokens, UserPrincipal } from "../access-tokens.ts";
import { grantLive } from "../token-liveness.ts";

export function createTokenLookup(deps: { grants: GrantStore; clock: Clock; accessTokens: AccessTokens }) {
  const { grants, clock, accessTokens } = deps;
  return async function lookup(token: string, app: Application) {
    if (token.startsWith(REFRESH_TOKEN_PREFIX)) {
      const row = await grants.findRefreshByHash(secretStorageKey(token, REFRESH_TOKEN_PREFIX));
      if (!row) return undefined;
      const grant = await grants.findGrant(row.grant_id);
      if (!grant) return undefined;
      // The owner's state decides (X-ID-TOK-5); another client's token is inactive for the caller anyway.
      const active = grantLive(grant, app) && !row.used_at && row.expires_at > clock.now().toISOString();
      return { kind: "refresh" as const, grant, row, active, ownedBy: grant.application_id === app.id };
    }
    if (token.split(".").length === 3) {
      let principal: UserPrincipal;
      try {
        principal = await accessTokens.verify(token);
      } catch {
        return undefined;
      }
      return { kind: "access" as const, principal, token, active: true, ownedBy: principal.clientId === app.clientId };
    }
    return undefined;
  };
}

export type TokenLookup = ReturnType<typeof createTokenLookup>;

function decodePart(token: string, index: number): Record<string, unknown> | undefined {
  try {
    const value = JSON.parse(Buffer.from(token.split(".")[index] ?? "", "base64url").toString("utf8"));
    return value && typeof value === "object" ? value : undefined;
  } catch {
    return undefined;
  }
}
/** The JOSE header of a compact JWT, unverified. */
export const decodeHeader = (token: string) => decodePart(token, 0);
/** The claims of a compact JWT, unverified (only read after the signature was checked, or for `exp`). */
export const decodePayload = (token: string) => decodePart(token, 1);
