/**
 * `client_credentials` (RFC 6749 §4.4; X-ID-CC-1..4): an authenticated confidential client asks
 * for a token for itself. What it may ask for is decided by client-credentials-request.ts; the
 * token's `sub` and `client_id` are the client id and its `aud` the resource asked for. No user
 * takes part, so there is no grant row, no refresh token (RFC 6749 §4.4.3) and no ID token, and
 * nothing is stored: the token ends when it expires or the application is disabled or deleted.
 */
import type { AccessTokens } from "../../access-tokens.ts";
import { formatScopes } from "../scopes.ts";
import { readClientCredentialsRequest } from "./client-credentials-request.ts";
import type { Grant } from "./grant.ts";
import type { TokenResponse } from "./issue.ts";

export function createClientCredentialsGrant(deps: { accessTokens: Pick<AccessTokens, "issue"> }): Grant {
  return {
    grantType: "client_credentials",
    parameters: [],
    async handle(app, form, binding): Promise<TokenResponse> {
      const asked = readClientCredentialsRequest(app, form);
      const access = await deps.accessTokens.issue({
        userId: app.clientId,
        clientId: app.clientId,
        scopes: asked.scopes,
        audience: asked.audience,
        // X-ID-DPOP-3: a proof at the token endpoint binds the token to its key (`cnf.jkt`).
        ...(binding ? { jkt: binding.jkt } : {}),
      });
      return {
        access_token: access.token,
        token_type: binding ? "DPoP" : "Bearer",
        expires_in: access.expiresIn,
        scope: formatScopes(asked.scopes),
      };
    },
  };
}
