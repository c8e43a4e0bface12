/**
 * An application's client credentials and client authentication settings (X-ID-CC-1..6): the
 * rules the contract's schema cannot say, checked on the settings as they will be after the
 * change (a method and its keys are judged together), and the columns they are stored in.
 */
import { isResourceUri } from "../oauth/resource-indicators.ts";
import { type FieldError, invalid } from "../../../../server/domain/errors.ts";
import type { Application, TokenEndpointAuthMethod } from "../../storage/applications.ts";
import type { ApplicationRow } from "../../storage/schema.ts";

export interface ClientAuthSettings {
  clientCredentials?: { enabled: boolean; scopes: string[] };
  resources?: string[];
  tokenEndpointAuthMethod?: TokenEndpointAuthMethod | null;
  jwks?: { keys: Record<string, unknown>[] } | null;
  jwksUri?: string | null;
}

/** Scopes that speak for a user: a token with no user never carries them (X-ID-CC-2). */
const USER_ONLY_SCOPES = ["openid", "offline_access"];
/** JWK members that only a private or symmetric key has: never registered (X-ID-CC-6). */
const PRIVATE_MEMBERS = ["d", "p", "q", "dp", "dq", "qi", "oth", "k"];

/** The settings an application has now, in the API's shape. */
export const currentClientAuthSettings = (app: Application): Required<ClientAuthSettings> => ({
  clientCredentials: { enabled: app.clientCredentialsEnabled, scopes: app.clientCredentialsScopes },
  resources: app.resources,
  tokenEndpointAuthMethod: app.tokenEndpointAuthMethod,
  jwks: app.jwks,
  jwksUri: app.jwksUri,
});

/** Throws one 400 `validation_failed` naming every bad field of `next` (the settings after the change). */
export function checkClientAuthSettings(next: Required<ClientAuthSettings>, clientType: Application["clientType"]): void {
  const errors: FieldError[] = [];
  const problem = (field: string, message: string) => errors.push({ field: `body.${field}`, message });
  const { clientCredentials, resources, tokenEndpointAuthMethod: method, jwks, jwksUri } = next;
  if (clientCredentials.enabled && clientType !== "confidential")
    problem("clientCredentials.enabled", "only a confidential application may use client credentials");
  clientCredentials.scopes.forEach((s, i) => {
    if (USER_ONLY_SCOPES.includes(s)) problem(`clientCredentials.scopes[${i}]`, `${s} needs a user; client credentials have none`);
    if (clientCredentials.scopes.indexOf(s) !== i) problem(`clientCredentials.scopes[${i}]`, `duplicate value ${JSON.stringify(s)}`);
  });
  resources.forEach((r, i) => {
    if (!isResourceUri(r)) problem(`resources[${i}]`, "must be an absolute URI without a fragment");
    if (resources.indexOf(r) !== i) problem(`resources[${i}]`, `duplicate value ${JSON.stringify(r)}`);
  });
  if (method === "none" && clientType === "confidential")
    problem("tokenEndpointAuthMethod", "a confidential application must authenticate");
  if (method !== null && method !== "none" && clientType === "public")
    problem("tokenEndpointAuthMethod", "a public application has no credentials: none or null");
  jwks?.keys.forEach((key, i) => {
    const secret = PRIVATE_MEMBERS.filter((m) => m in key);
    if (secret.length) problem(`jwks.keys[${i}]`, `must be a public key (no ${secret.join(", ")})`);
  });
  if (jwksUri !== null) {
    const url = URL.canParse(jwksUri) ? new URL(jwksUri) : undefined;
    if (url?.protocol !== "https:" || url.username || url.password) problem("jwksUri", "must be an https URL without credentials");
  }
  if (jwks && jwksUri !== null) problem("jwksUri", "give jwks or jwksUri, not both");
  if (method === "private_key_jwt" && !jwks && jwksUri === null)
    problem("tokenEndpointAuthMethod", "private_key_jwt needs the application's keys: jwks or jwksUri");
  if (errors.length) throw invalid("validation_failed", "Some application settings are invalid.", errors);
}

/** The columns of the given settings (absent ones untouched). */
export function clientAuthColumns(s: ClientAuthSettings): Partial<ApplicationRow> {
  const row: Partial<ApplicationRow> = {};
  if (s.clientCredentials !== undefined) {
    row.client_credentials_enabled = s.clientCredentials.enabled;
    row.client_credentials_scopes = JSON.stringify(s.clientCredentials.scopes);
  }
  if (s.resources !== undefined) row.resources = JSON.stringify(s.resources);
  if (s.tokenEndpointAuthMethod !== undefined) row.token_endpoint_auth_method = s.tokenEndpointAuthMethod;
  if (s.jwks !== undefined) row.jwks = s.jwks ? JSON.stringify(s.jwks) : null;
  if (s.jwksUri !== undefined) row.jwks_uri = s.jwksUri;
  return row;
}
