/**
 * What a `client_credentials` request (RFC 6749 §4.4.2) may ask for, decided from the application
 * alone: the grant must be enabled for it (X-ID-CC-1, `unauthorized_client` otherwise), `scope`
 * a subset of its client-credentials scopes (X-ID-CC-2, `invalid_scope`; absent: all of them, as
 * oidc-provider does), and `resource` one of its registered absolute URIs without a fragment
 * (X-ID-CC-3, RFC 8707 §2: `invalid_target`; absent: the token's audience is the client itself).
 * The grant module signs the token from this answer; nothing here touches storage.
 */
import { isResourceUri } from "../resource-indicators.ts";
import type { Application } from "../../../storage/applications.ts";
import { OAuthError, invalidScope } from "../errors.ts";
import { parseScopes, scopesOutside } from "../scopes.ts";

export interface ClientCredentialsRequest {
  scopes: string[];
  /** The access token's `aud`: the resource asked for, or the client id. */
  audience: string;
}

const invalidTarget = (description: string) => new OAuthError("invalid_target", description);

export function readClientCredentialsRequest(app: Application, form: Readonly<Record<string, string>>): ClientCredentialsRequest {
  if (app.clientType !== "confidential" || !app.clientCredentialsEnabled)
    throw new OAuthError("unauthorized_client", "This application may not use the client_credentials grant.");
  const scopes = form.scope === undefined ? [...app.clientCredentialsScopes] : parseScopes(form.scope);
  const outside = scopesOutside(scopes, app.clientCredentialsScopes);
  if (outside.length) throw invalidScope(`Scopes not allowed for this application's client credentials: ${outside.join(" ")}.`);
  const resource = form.resource;
  if (resource === undefined) return { scopes, audience: app.clientId };
  if (!isResourceUri(resource)) throw invalidTarget("resource must be an absolute URI without a fragment.");
  if (!app.resources.includes(resource)) throw invalidTarget("resource is not one this application may ask tokens for.");
  return { scopes, audience: resource };
}
