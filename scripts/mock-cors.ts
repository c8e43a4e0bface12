/**
 * The CORS policy of each mock (`npm run mock`), as close to its service's contract as a mock
 * without data can be:
 * - identity (X-ID-CORS-1): the same endpoints answer other origins (discovery and JWKS with `*`;
 *   token, revocation and UserInfo with the exact origin); the administration API, introspection
 *   and the hosted pages are same-origin only (preflight 405). The mock has no applications to
 *   take origins from, so it accepts the origins in `CORS_ORIGINS`, or every origin when unset.
 * - repository (X-RB-10): the origins in `CORS_ORIGINS`, default none, as the service.
 * - email (X-EM-26) and the webhook receiver contracts: none (Prism answers a preflight 405).
 */
import type { CorsPolicy } from "../server/http/cors.ts";
import { IDENTITY_CORS_ROUTES } from "../handlers/identity/cors.ts";
import { repositoryCorsPolicy } from "../handlers/repository/cors.ts";

export function mockCorsPolicy(mock: string, origins: readonly string[]): CorsPolicy {
  if (mock === "identity") {
    const listed = new Set(origins);
    return { route: (path) => IDENTITY_CORS_ROUTES[path]?.route, allows: async (origin) => listed.size === 0 || listed.has(origin) };
  }
  if (mock === "repository") return repositoryCorsPolicy(origins);
  return { route: () => undefined, allows: async () => false };
}
