/**
 * Which browser pages may use an application at the endpoints a browser client calls
 * (X-ID-CORS-2). Pure rules over the application; the CORS protocol itself is the HTTP layer's (cors.ts).
 */
import type { Application } from "../../storage/applications.ts";

/**
 * Where a cross-origin page meets the application: `token` for the token and revocation endpoints
 * (client authentication in the request), `userinfo` for the UserInfo endpoint (the client of the
 * access token).
 */
export type BrowserEndpoint = "token" | "userinfo";

/** Origins of a list of URLs, first occurrence first, duplicates dropped. */
export const originsOf = (urls: readonly string[]): string[] => [...new Set(urls.map((u) => new URL(u).origin))];

/**
 * The origins whose pages may use the application: its `allowedOrigins` when set (an empty list:
 * none), otherwise the origins of its redirect URIs, exactly: the page that receives the code
 * is the one that exchanges it, as oidc-provider and Logto derive them.
 */
export const browserOrigins = (app: Pick<Application, "redirectUris" | "allowedOrigins">): string[] =>
  app.allowedOrigins ?? originsOf(app.redirectUris);

/**
 * Whether a page at `origin` may use this application at `endpoint`. The token and revocation
 * endpoints take public clients only: a confidential client's secret never belongs in a browser
 * (RFC 9700 §2.1 and the browser-based apps BCP; oidc-provider's default `clientBasedCORS` alike).
 * A disabled application is refused like an unknown one (X-ID-TOK-5).
 */
export function acceptsOrigin(
  app: Pick<Application, "redirectUris" | "allowedOrigins" | "clientType" | "enabled">,
  origin: string,
  endpoint: BrowserEndpoint,
): boolean {
  if (!app.enabled) return false;
  if (endpoint === "token" && app.clientType !== "public") return false;
  return browserOrigins(app).includes(origin);
}
