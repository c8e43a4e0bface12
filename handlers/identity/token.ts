/**
 * `POST /oauth/token`, `/oauth/revoke`, `/oauth/introspect` (RFC 6749 §4.1.3, §5, §6; RFC 7009;
 * RFC 7662). Every answer carries `Cache-Control: no-store` and `Pragma: no-cache`; every error is
 * RFC 6749 §5.2 JSON (X-ID-TOK-3), also when the body breaks the contract.
 */
import type { RequestHeaders } from "../../server/http/handler-types.ts";
import { HttpResponseError, type HttpProblem } from "../../server/http/problem.ts";
import type { RawRequest } from "../../server/http/app.ts";
import type { IdentityDeps, IdentityHandlers } from "./identity-handlers.ts";
import { ClientAuthError, readClientCredentials } from "./domain/oauth/client-auth.ts";
import { invalidRequest, OAuthError } from "./domain/oauth/errors.ts";
import { acceptsOrigin } from "./domain/oauth/browser-origins.ts";
import type { Application } from "./storage/applications.ts";
import { requestOrigin } from "./shared/request-origin.ts";
import { NO_STORE, oauthErrorResponse, readOAuthForm } from "./shared/oauth-form.ts";
import { DpopNonceError, DpopProofError } from "./domain/dpop/proof.ts";
import type { TokenBinding } from "./domain/oauth/grants/grant.ts";

/**
 * The longest value of each parameter, as the contract states it (spec/identity/token.tsp). The
 * contract check cannot refuse these itself, since these endpoints answer every contract failure
 * in RFC 6749 terms by running their own checks on the raw form: so the limits are checked here.
 */
const MAX_LENGTH: Readonly<Record<string, number>> = {
  client_id: 255,
  client_secret: 255,
  code: 512,
  redirect_uri: 2048,
  refresh_token: 512,
  scope: 1024,
  token: 4096,
  token_type_hint: 64,
  resource: 2048,
  client_assertion: 8192,
  client_assertion_type: 128,
};

/** The form as single string values, within the limits above (shared/oauth-form.ts). */
const readForm = (body: unknown, headers: RequestHeaders) => readOAuthForm(body, headers, MAX_LENGTH);

/**
 * X-ID-CORS-2: a page of another origin may use only a public client that accepts its origin.
 * Anything else is refused before the grant or revocation runs (no code spent, nothing revoked),
 * whether or not the browser sent a preflight: a form POST needs none. Clients outside browsers
 * send no `Origin`.
 */
function refuseForeignPage(app: Application, headers: RequestHeaders, issuer: string): void {
  const origin = headers.origin;
  if (typeof origin !== "string" || origin === new URL(issuer).origin || acceptsOrigin(app, origin, "token")) return;
  throw invalidRequest(
    app.clientType === "public"
      ? "Pages of this origin may not use this client: it is neither in the application's allowedOrigins nor the origin of one of its redirect URIs."
      : "A confidential client cannot be used from a browser page, which cannot keep its secret: use a public client with PKCE.",
  );
}

function required(form: Record<string, string>, ...names: string[]): void {
  for (const name of names) if (!form[name]) throw invalidRequest(`${name} is required.`);
}

/** RFC 9449 §8: `use_dpop_nonce`, its answer carrying the nonce to retry with. */
class UseDpopNonce extends OAuthError {
  readonly nonce: string;

  constructor(description: string, nonce: string) {
    super("use_dpop_nonce", description);
    this.nonce = nonce;
  }
}

/** OAuthError → its RFC 6749 §5.2 answer (shared/oauth-form.ts); `use_dpop_nonce` also names the nonce (RFC 9449 §8). */
function errorResponse(err: OAuthError): HttpResponseError {
  const answer = oauthErrorResponse(err);
  if (err instanceof UseDpopNonce) answer.headers["DPoP-Nonce"] = err.nonce;
  return answer;
}

/** Runs an endpoint, turning OAuth errors into their JSON answers. */
async function oauthEndpoint<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    if (err instanceof OAuthError) throw errorResponse(err);
    throw err;
  }
}

/** Counts each token request by grant type and outcome (X-API-11): the success, or the OAuth error it was answered with. */
async function tokenAnswer(body: unknown, headers: RequestHeaders, deps: IdentityDeps) {
  const grantType = body && typeof body === "object" ? (body as Record<string, unknown>).grant_type : undefined;
  const count = (outcome: string) => deps.oauth.grantMetrics.grant(typeof grantType === "string" ? grantType : "", outcome);
  try {
    const answer = await grant(body, headers, deps);
    count("success");
    return answer;
  } catch (err) {
    count(err instanceof OAuthError ? err.code : "error");
    throw err;
  }
}

async function grant(body: unknown, headers: RequestHeaders, deps: IdentityDeps) {
  const form = readForm(body, headers);
  const grantType = form.grant_type;
  if (!grantType) throw invalidRequest("grant_type is required.");
  const handler = deps.oauth.grants.get(grantType);
  if (!handler) throw new OAuthError("unsupported_grant_type", `grant_type must be ${[...deps.oauth.grants.keys()].join(" or ")}.`);
  required(form, ...handler.parameters);
  const app = await deps.oauth.authenticateClient(readClientCredentials(headers.authorization, form));
  refuseForeignPage(app, headers, deps.oauth.issuer);
  const answer = await handler.handle(app, form, await dpopBinding(app, headers, deps));
  // X-ID-DPOP-7: with nonces required, every answer hands out the current one (RFC 9449 §8.2).
  const nonce = deps.oauth.dpop.nonce();
  return { status: 200 as const, headers: { ...NO_STORE, ...(nonce ? { "DPoP-Nonce": nonce } : {}) }, body: answer };
}

/**
 * X-ID-DPOP-3: a `DPoP` header binds what the grant issues to the proof's key; an invalid one is
 * `invalid_dpop_proof` (RFC 9449 §5), checked after the client is authenticated and before the
 * grant runs, so a refused proof spends no code or refresh token.
 */
async function dpopBinding(app: Application, headers: RequestHeaders, deps: IdentityDeps): Promise<TokenBinding | undefined> {
  // X-ID-DPOP-8: an application registered with dpopBoundAccessTokens gets bound tokens only.
  if (headers.dpop === undefined && app.dpopBoundAccessTokens)
    throw new OAuthError("invalid_dpop_proof", "This application's tokens must be DPoP-bound: send a DPoP proof.");
  if (headers.dpop === undefined) return undefined;
  try {
    return await deps.oauth.dpop.verify(headers.dpop, { method: "POST", url: `${deps.oauth.issuer}/oauth/token` });
  } catch (err) {
    if (err instanceof DpopNonceError) throw new UseDpopNonce(err.message, err.nonce);
    if (err instanceof DpopProofError) throw new OAuthError("invalid_dpop_proof", err.message);
    throw err;
  }
}

async function revokeAnswer(body: unknown, headers: RequestHeaders, deps: IdentityDeps, ip?: string) {
  const form = readForm(body, headers);
  required(form, "token");
  const app = await deps.oauth.authenticateClient(readClientCredentials(headers.authorization, form));
  refuseForeignPage(app, headers, deps.oauth.issuer);
  await deps.oauth.revoke(app, form.token!, ip === undefined ? undefined : requestOrigin({ ip, headers }));
  return { status: 200 as const, headers: { ...NO_STORE } };
}

async function introspectAnswer(body: unknown, headers: RequestHeaders, deps: IdentityDeps) {
  const form = readForm(body, headers);
  required(form, "token");
  const creds = readClientCredentials(headers.authorization, form);
  const app = await deps.oauth.authenticateClient(creds);
  if (app.clientType !== "confidential") throw new ClientAuthError("Introspection requires a confidential client.", creds.basic);
  return { status: 200 as const, headers: { ...NO_STORE }, body: await deps.oauth.introspect(app, form.token!) };
}

export const tokenHandlers: Pick<IdentityHandlers, "token" | "revoke" | "introspect"> = {
  token: ({ body, headers }, deps) => oauthEndpoint(() => tokenAnswer(body, headers, deps)),
  revoke: ({ body, headers, ip }, deps) => oauthEndpoint(() => revokeAnswer(body, headers, deps, ip)),
  introspect: ({ body, headers }, deps) => oauthEndpoint(() => introspectAnswer(body, headers, deps)),
};

/**
 * A body that breaks the contract (not form-urlencoded, no grant model matched, too large) is
 * answered in RFC 6749 terms too: the endpoint's own checks run on the raw form and name the
 * problem (`unsupported_grant_type`, `invalid_request`, ...).
 */
const viaEndpoint =
  (
    answer: (
      body: unknown,
      headers: RequestHeaders,
      deps: IdentityDeps,
    ) => Promise<{ status: number; headers: Record<string, string>; body?: unknown }>,
    deps: IdentityDeps,
  ) =>
  async (problem: HttpProblem, raw: RawRequest): Promise<HttpResponseError> => {
    if (problem.status === 413) return errorResponse(invalidRequest("The request body is too large."));
    try {
      const ok = await oauthEndpoint(() => answer(raw.body, raw.headers, deps));
      return new HttpResponseError(ok.status, ok.body, { headers: ok.headers });
    } catch (err) {
      if (err instanceof HttpResponseError) return err;
      throw err;
    }
  };

export const tokenProblemMappers = (deps: IdentityDeps) => ({
  token: viaEndpoint(tokenAnswer, deps),
  revoke: viaEndpoint(revokeAnswer, deps),
  introspect: viaEndpoint(introspectAnswer, deps),
});

/**
 * `POST /oauth/par` (RFC 9126, X-ID-PAR-1, X-ID-PAR-2): the client authenticates as at the token
 * endpoint, then the authorization area checks and stores the request. Its errors are RFC 6749
 * §5.2 JSON like the token endpoint's.
 */
async function pushedRequestAnswer(body: unknown, headers: RequestHeaders, deps: IdentityDeps) {
  const form = readForm(body, headers);
  const app = await deps.oauth.authenticateClient(readClientCredentials(headers.authorization, form));
  refuseForeignPage(app, headers, deps.oauth.issuer);
  return { status: 201 as const, headers: { ...NO_STORE }, body: await deps.oauth.authorization.push(app, form) };
}

export const pushedRequestHandlers: Pick<IdentityHandlers, "pushAuthorizationRequest"> = {
  pushAuthorizationRequest: ({ body, headers }, deps) => oauthEndpoint(() => pushedRequestAnswer(body, headers, deps)),
};

export const pushedRequestProblemMappers = (deps: IdentityDeps) => ({
  pushAuthorizationRequest: viaEndpoint(pushedRequestAnswer, deps),
});
