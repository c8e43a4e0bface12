/**
 * The identity service's CORS policy (X-ID-CORS-1, X-ID-CORS-2): which endpoints a browser client
 * calls from another origin, and for which origins. The protocol is server/http/cors.ts; the rule
 * per application is domain/oauth/browser-origins.ts.
 *
 * - Discovery and the JWKS are public documents read without credentials: `*`, as oidc-provider.
 * - Token and revocation (client authentication in the body) and UserInfo (the client of the
 *   access token) are `listed`. A preflight names no client and carries no body, so it is allowed
 *   for an origin that some enabled application accepts there (Hydra answers preflights from its
 *   clients' origins likewise); the answer itself goes to the page only when the request's own
 *   client accepts its origin. Requests that name no known client (no client id, an unknown or
 *   disabled one, an access token that is not one of ours) are answered under the preflight's rule,
 *   so a page can read why it was refused.
 * - Introspection takes confidential clients only (a secret, which no page may hold) and is meant
 *   for resource servers: same-origin only, like the hosted pages and the administration API.
 */
import { decodeJwt } from "jose";
import type Koa from "koa";
import type { CorsPolicy, CorsRoute } from "../../server/http/cors.ts";
import type { IdentityDeps } from "./identity-handlers.ts";
import { readClientCredentials } from "./domain/oauth/client-auth.ts";
import { acceptsOrigin, type BrowserEndpoint } from "./domain/oauth/browser-origins.ts";

const OPEN: CorsRoute = { access: "open", methods: ["GET"], allowHeaders: [], exposeHeaders: [] };
const CLIENT: CorsRoute = {
  access: "listed",
  methods: ["POST"],
  allowHeaders: ["Authorization", "Content-Type"],
  exposeHeaders: ["WWW-Authenticate"],
};
/** X-ID-DPOP-9: a page sends DPoP proofs to token and UserInfo, and reads the server's nonce. */
const TOKEN: CorsRoute = {
  access: "listed",
  methods: ["POST"],
  allowHeaders: ["Authorization", "Content-Type", "DPoP"],
  exposeHeaders: ["WWW-Authenticate", "DPoP-Nonce"],
};
const USERINFO: CorsRoute = {
  access: "listed",
  methods: ["GET"],
  allowHeaders: ["Authorization", "DPoP"],
  exposeHeaders: ["WWW-Authenticate", "DPoP-Nonce"],
};

/** Every path that answers cross-origin requests, and where its client comes from. */
export const IDENTITY_CORS_ROUTES: Readonly<Record<string, { route: CorsRoute; endpoint?: BrowserEndpoint }>> = {
  "/.well-known/openid-configuration": { route: OPEN },
  "/.well-known/oauth-authorization-server": { route: OPEN },
  "/.well-known/jwks.json": { route: OPEN },
  "/oauth/token": { route: TOKEN, endpoint: "token" },
  "/oauth/revoke": { route: CLIENT, endpoint: "token" },
  "/oauth/userinfo": { route: USERINFO, endpoint: "userinfo" },
};

/** The client id a request names: HTTP Basic or `client_id` in the form (token, revocation), or the access token's `client_id` claim (UserInfo). */
function clientIdOf(ctx: Koa.Context, endpoint: BrowserEndpoint): string | undefined {
  const authorization = ctx.headers.authorization;
  if (endpoint === "token") {
    const body = (ctx.request as { body?: unknown }).body;
    try {
      return readClientCredentials(authorization, body && typeof body === "object" ? (body as Record<string, unknown>) : {}).clientId;
    } catch {
      return undefined;
    }
  }
  const token = /^(?:Bearer|DPoP)\s+(\S+)\s*$/i.exec(authorization ?? "")?.[1];
  if (!token) return undefined;
  // Unverified on purpose: it only chooses whose origins apply. The endpoint verifies the token;
  // when it was forged, the answer is a 401, readable only by a page of an origin the claimed
  // application accepts anyway.
  try {
    const claim = decodeJwt(token).client_id;
    return typeof claim === "string" ? claim : undefined;
  } catch {
    return undefined;
  }
}

export function identityCorsPolicy({ accounts }: IdentityDeps): CorsPolicy {
  const endpointOf = (path: string) => IDENTITY_CORS_ROUTES[path]?.endpoint ?? "userinfo";
  const anyAccepts = (origin: string, endpoint: BrowserEndpoint) => accounts.anyApplicationAcceptsOrigin(origin, endpoint === "token");
  return {
    route: (path) => IDENTITY_CORS_ROUTES[path]?.route,
    allows: (origin, path) => anyAccepts(origin, endpointOf(path)),
    async forResponse(origin, koa) {
      const endpoint = endpointOf(koa.path);
      const clientId = clientIdOf(koa, endpoint);
      const app = clientId === undefined ? undefined : await accounts.findApplicationByClientId(clientId);
      // A disabled application is refused like an unknown one (X-ID-TOK-5), and looks like one here too.
      if (!app?.enabled) return anyAccepts(origin, endpoint);
      return acceptsOrigin(app, origin, endpoint);
    },
  };
}
