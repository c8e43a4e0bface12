/**
 * The grant types the token endpoint supports, by `grant_type`: the endpoint looks the form's value
 * up here and answers `unsupported_grant_type` (RFC 6749 §5.2) for anything else. A new grant is a
 * module of its own in this folder, its `grant_type` in GRANT_TYPES, and one line in oauth-area.ts.
 */
import type { Grant } from "./grant.ts";

/** Every `grant_type` a grant module may serve; the token metrics count these by name, any other as `other`. */
export const GRANT_TYPES = [
  "authorization_code",
  "refresh_token",
  "urn:ietf:params:oauth:grant-type:device_code",
  "client_credentials",
] as const;
export type GrantType = (typeof GRANT_TYPES)[number];

export type GrantRegistry = ReadonlyMap<string, Grant>;

export function createGrantRegistry(grants: readonly Grant[]): GrantRegistry {
  return new Map(grants.map((g) => [g.grantType, g]));
}
