/** Scopes (ID-SCOPE-1): parsing, checking against an application, and plain words for the pages. */
export const KNOWN_SCOPES = ["openid", "profile", "email", "offline_access"] as const;

/** Space-separated scope string → distinct scopes, in request order. */
export const parseScopes = (scope: string): string[] => [...new Set(scope.split(" ").filter(Boolean))];

export const formatScopes = (scopes: string[]): string => scopes.join(" ");

/** Scopes not in `allowed`. */
export const scopesOutside = (scopes: string[], allowed: string[]): string[] => scopes.filter((s) => !allowed.includes(s));

/** What the consent and login pages say each scope lets the application do. */
export function describeScope(scope: string, applicationName: string, resource?: string): string {
  switch (scope) {
    case "openid":
      return "Know who you are (your account identifier)";
    case "profile":
      return "See your name";
    case "email":
      return "See your email address";
    case "offline_access":
      return `Stay connected: ${applicationName} can keep access when you are not using it`;
    default:
      // An API scope (X-ID-RES-2): only asked for with a resource, so the page can name the API.
      return resource ? `Use ${resourceName(resource)} on your behalf (${scope})` : scope;
  }
}

/** How the pages name a resource: its host (and path when it has one), which the user can recognise. */
function resourceName(resource: string): string {
  const url = URL.parse(resource);
  if (!url?.host) return resource;
  return url.pathname === "/" ? url.host : `${url.host}${url.pathname}`;
}
