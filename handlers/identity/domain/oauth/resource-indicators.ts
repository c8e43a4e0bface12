/**
 * Resource indicators (RFC 8707) on the authorization code flow (X-ID-RES-1..4). A request may name
 * one resource the application registered; its grant remembers it, and every access token of the
 * grant has it as `aud`, so a resource server that checks its audience (RFC 9068 §4) accepts them
 * and no other service's. API scopes (X-ID-RES-2), the application's scopes beyond the OpenID
 * four, only mean something to a resource and are refused without one.
 */
import type { Application } from "../../storage/applications.ts";
import { KNOWN_SCOPES } from "./scopes.ts";

/** RFC 8707 §2: an absolute URI with no fragment. */
export function isResourceUri(value: string): boolean {
  return URL.canParse(value) && !value.includes("#");
}

/** Why the application may not ask for `resource` (`invalid_target`), or undefined when it may. */
export function resourceRefusal(application: Application, resource: string): string | undefined {
  if (!isResourceUri(resource)) return "resource must be an absolute URI without a fragment.";
  if (!application.resources.includes(resource)) return "resource is not one this application may ask tokens for.";
  return undefined;
}

const isOpenIdScope = (scope: string) => (KNOWN_SCOPES as readonly string[]).includes(scope);

/**
 * Why `scopes` may not be asked for (`invalid_scope`), or undefined: each must be an OpenID scope
 * the application allows, or one of its API scopes, and API scopes only with a resource.
 */
export function scopeRefusal(application: Application, scopes: string[], resource: string | undefined): string | undefined {
  const unknown = scopes.filter((s) => !isOpenIdScope(s) && !application.apiScopes.includes(s));
  if (unknown.length) return `Unknown scope: ${unknown.join(" ")}.`;
  const notAllowed = scopes.filter((s) => isOpenIdScope(s) && !application.allowedScopes.includes(s));
  if (notAllowed.length) return `Scope not allowed for this application: ${notAllowed.join(" ")}.`;
  const apiScopes = scopes.filter((s) => !isOpenIdScope(s));
  if (apiScopes.length && resource === undefined) return `API scopes need a resource (RFC 8707): ${apiScopes.join(" ")}.`;
  return undefined;
}

/** X-ID-RES-4: a `resource` sent to the token endpoint must be the grant's own. */
export function tokenResourceRefusal(sent: string | undefined, granted: string | null | undefined): string | undefined {
  if (sent === undefined || sent === granted) return undefined;
  return granted ? "resource is not the one this grant was made for." : "This grant was made without a resource.";
}
