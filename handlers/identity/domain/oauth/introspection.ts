/** RFC 7662 §2.2: only a token issued to the caller, active, is described; anything else is `{ active: false }`. */
import type { operations } from "../../../../generated/types/identity.ts";
import type { Application } from "../../storage/applications.ts";
import type { UserStore } from "../../storage/users.ts";
import { grantOfJti, isClientToken } from "../token-liveness.ts";
import { formatScopes } from "./scopes.ts";
import { decodePayload, type TokenLookup } from "./token-lookup.ts";

/** The introspection endpoint's body, as the contract types it. */
export type IntrospectionResponse = operations["introspect"]["responses"][200]["content"]["application/json"];

export function createIntrospection(deps: { users: UserStore; issuer: string; lookup: TokenLookup }) {
  const { users, issuer, lookup } = deps;

  return async function introspect(app: Application, token: string): Promise<IntrospectionResponse> {
    const found = await lookup(token, app);
    if (!found?.active || !found.ownedBy) return { active: false };
    if (found.kind === "refresh") {
      const user = await users.findById(found.grant.user_id);
      return {
        active: true,
        scope: formatScopes(JSON.parse(found.grant.scopes)),
        client_id: app.clientId,
        ...(user ? { username: user.email } : {}),
        token_type: "refresh_token",
        exp: Math.floor(Date.parse(found.row.expires_at) / 1000),
        iat: Math.floor(Date.parse(found.row.created_at) / 1000),
        sub: found.grant.user_id,
        aud: app.clientId,
        iss: issuer,
      };
    }
    const payload = decodePayload(found.token) ?? {};
    // A client's own token (X-ID-CC-8) has no user, so no `username`; `sub` is the client id.
    const client = isClientToken({
      userId: found.principal.userId,
      clientId: found.principal.clientId,
      grantId: grantOfJti(found.principal.jti),
    });
    const user = client ? undefined : await users.findById(found.principal.userId);
    return {
      active: true,
      scope: formatScopes(found.principal.scopes),
      client_id: found.principal.clientId,
      ...(user ? { username: user.email } : {}),
      token_type: found.principal.jkt ? "DPoP" : "Bearer",
      exp: payload.exp as number | undefined,
      iat: payload.iat as number | undefined,
      sub: found.principal.userId,
      aud: found.principal.audience,
      iss: issuer,
      jti: found.principal.jti,
      ...(found.principal.jkt ? { cnf: { jkt: found.principal.jkt } } : {}),
    };
  };
}

export type Introspection = ReturnType<typeof createIntrospection>;
