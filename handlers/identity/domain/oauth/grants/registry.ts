/**
 * The grant types the token endpoint supports, by `grant_type`: the endpoint looks the form's value
 * up here and answers `unsupported_grant_type` (RFC 6749 §5.2) for anything else. A new grant is a
 * module of its own in this folder and one line below.
 */
import type { Grant } from "./grant.ts";

export type GrantRegistry = ReadonlyMap<string, Grant>;

export function createGrantRegistry(grants: readonly Grant[]): GrantRegistry {
  return new Map(grants.map((g) => [g.grantType, g]));
}
