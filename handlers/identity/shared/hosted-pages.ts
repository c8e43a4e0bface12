/**
 * The HTTP side every hosted page shares (the authorization, account and social pages): security
 * headers, the CSRF cookie, the session cookie, redirects, error pages thrown as ready responses
 * (their statuses are not "success" in the typed handler map), the posted form's checks
 * (`hostedForm`) and the sign-in that ends a form (`signIn`).
 */
import type { RawRequest } from "../../../server/http/app.ts";
import type { RequestHeaders } from "../../../server/http/handler-types.ts";
import type { SignInRefusal } from "../../../server/security/sign-in-throttle.ts";
import { randomSecret } from "../../../server/security/tokens.ts";
import { type HttpProblem, HttpResponseError } from "../../../server/http/problem.ts";
import type { IdentityDeps, IdentityPrincipal } from "../identity-handlers.ts";
import type { PendingRequest } from "../domain/oauth/authorization.ts";
import { clearCookie, CSRF_COOKIE, parseCookies, serializeCookie, SESSION_COOKIE } from "../domain/oauth/cookies.ts";
import type { RequestView } from "../views/authorize.ts";
import { expiredFormPage, lockedPage } from "../views/messages.ts";
import { accountDisabledPage } from "../views/account-disabled.ts";
import type { Session, SessionDevice, SignInRecord } from "../domain/oauth/sessions.ts";
import type { FirstFactorMethod } from "../domain/factors/levels.ts";
import { requestOrigin } from "./request-origin.ts";

/** What a hosted-page operation answers: a page or a redirect. */
export interface Reply {
  status: number;
  headers: Record<string, string | string[]>;
  body?: string;
  contentType?: string;
}

/**
 * Headers of every hosted page. The strict policy allows no script at all; `form-action` names
 * the client's origin too, because browsers check the redirect that follows a form post.
 */
function pageHeaders(formTargets: string[] = [], cookies: string[] = []): Record<string, string | string[]> {
  const origins = [...new Set(formTargets.map(originOf).filter((o): o is string => Boolean(o)))];
  const headers: Record<string, string | string[]> = {
    "Content-Security-Policy": `default-src 'none'; img-src 'self' https: data: http://localhost:* http://127.0.0.1:*; style-src 'unsafe-inline'; form-action 'self'${origins.map((o) => ` ${o}`).join("")}; frame-ancestors 'none'; base-uri 'none'`,
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
  };
  if (cookies.length) headers["Set-Cookie"] = cookies;
  return headers;
}

const originOf = (uri: string) => {
  try {
    return new URL(uri).origin;
  } catch {
    return undefined;
  }
};

/** A hosted page: its HTML with every hosted page's headers (`formTargets` and `cookies` as in pageHeaders). */
export const page = (status: number, html: string, formTargets: string[] = [], cookies: string[] = []): Reply => ({
  status,
  headers: pageHeaders(formTargets, cookies),
  body: html,
  contentType: "text/html; charset=utf-8",
});

export const redirect = (status: 302 | 303, location: string, cookies: string[] = []): Reply => ({
  status,
  headers: {
    Location: location,
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",
    ...(cookies.length ? { "Set-Cookie": cookies } : {}),
  },
});

/** Success statuses are returned; error pages travel as HttpResponseError (their statuses are not in the typed success union). */
export function send<T>(reply: Reply): T {
  if (reply.status >= 400)
    throw new HttpResponseError(reply.status, reply.body, {
      headers: reply.headers,
      contentType: reply.contentType ?? "text/html; charset=utf-8",
    });
  return reply as T;
}

export const asError = (reply: Reply) =>
  new HttpResponseError(reply.status, reply.body, { headers: reply.headers, contentType: reply.contentType ?? "text/html; charset=utf-8" });

/** The browser's CSRF cookie value, made (and set) when it has none yet. */
export function csrfOf(headers: RequestHeaders, deps: IdentityDeps): { token: string; cookies: string[] } {
  const existing = parseCookies(headers.cookie)[CSRF_COOKIE];
  if (existing && /^[A-Za-z0-9_-]{43}$/.test(existing)) return { token: deps.oauth.secrets.csrfToken(existing), cookies: [] };
  const value = randomSecret(32);
  return {
    token: deps.oauth.secrets.csrfToken(value),
    cookies: [serializeCookie(CSRF_COOKIE, value, { secure: deps.oauth.secureCookies })],
  };
}

export const csrfValid = (headers: RequestHeaders, token: unknown, deps: IdentityDeps) =>
  deps.oauth.secrets.csrfValid(parseCookies(headers.cookie)[CSRF_COOKIE], token);

export const sessionCookie = (value: string, deps: IdentityDeps) =>
  serializeCookie(SESSION_COOKIE, value, { secure: deps.oauth.secureCookies, maxAgeSeconds: 7 * 24 * 3600 });
export const clearSessionCookie = (deps: IdentityDeps) => clearCookie(SESSION_COOKIE, { secure: deps.oauth.secureCookies });

/** The browser behind a request, as a session records it (X-ID-ACCT-3). */
export const sessionDevice = (headers: RequestHeaders, ip: string): SessionDevice => {
  const agent = headers["user-agent"];
  return { userAgent: typeof agent === "string" ? agent : undefined, ip };
};

export const sessionOf = (auth: IdentityPrincipal): Session | undefined => (auth?.kind === "session" ? auth : undefined);

/** 403, never a redirect: a forged, stale or foreign form (CSRF) or an unknown or expired request. */
export const expired = () => page(403, expiredFormPage());

/** The view of the login and consent pages of a request. */
export function requestView(r: PendingRequest, csrfToken: string, deps: IdentityDeps): RequestView {
  const configured = deps.accounts.configuredProviders();
  return {
    requestId: r.id,
    csrfToken,
    applicationName: r.application.name,
    branding: r.application.branding,
    scopes: r.scopes,
    ...(r.resource !== undefined ? { resource: r.resource } : {}),
    // Enabled for this application AND configured on this deployment, and no other (ID-AZ-7).
    providers: configured.filter((p) => r.application.enabledProviders.includes(p.id)).map((p) => ({ id: p.id, name: p.name })),
  };
}

/** A hosted form as posted: its fields and what its answer may need of the request. */
export interface FormPost {
  form: Record<string, unknown>;
  headers: RequestHeaders;
  ip: string;
  /** The signed-in session, when the handler has one (a problem mapper has none to give). */
  auth: IdentityPrincipal;
  /** Set when the body broke the contract: the form is shown again with a message, never a problem document. */
  problem?: HttpProblem;
}

/**
 * A hosted form's operation, as its handler and its problem mapper. Both check the CSRF token
 * first (a forged, stale or foreign form is the 403 page, never a redirect), then `reply` answers
 * as a page or a redirect: the handler's body met the contract; the mapper's did not (`problem`).
 */
export function hostedForm(reply: (post: FormPost, deps: IdentityDeps) => Promise<Reply>) {
  const answer = async (post: Omit<FormPost, "form"> & { body: unknown }, deps: IdentityDeps): Promise<Reply> => {
    const { body, ...rest } = post;
    const form = (body && typeof body === "object" ? body : {}) as Record<string, unknown>;
    if (!csrfValid(post.headers, form.csrf_token, deps)) return expired();
    return reply({ form, ...rest }, deps);
  };
  return {
    async handler<T>(req: { body: unknown; headers: RequestHeaders; ip: string; auth: IdentityPrincipal }, deps: IdentityDeps): Promise<T> {
      return send<T>(await answer({ body: req.body, headers: req.headers, ip: req.ip, auth: req.auth }, deps));
    },
    problemMapper: (deps: IdentityDeps) => async (problem: HttpProblem, raw: RawRequest) =>
      asError(await answer({ body: raw.body, headers: raw.headers, ip: raw.ip, auth: undefined, problem }, deps)),
  };
}

/** The second step of a sign-in (X-ID-MFA-4): its cookie lives as long as the request it continues. */
export const SECOND_FACTOR_COOKIE = "identity_second_factor";
export const secondFactorCookie = (value: string, deps: IdentityDeps) =>
  serializeCookie(SECOND_FACTOR_COOKIE, value, { secure: deps.oauth.secureCookies, maxAgeSeconds: 600 });
export const clearSecondFactorCookie = (deps: IdentityDeps) => clearCookie(SECOND_FACTOR_COOKIE, { secure: deps.oauth.secureCookies });
export const secondFactorPath = (requestId: string) => `/signin/second-factor?request_id=${encodeURIComponent(requestId)}`;

/**
 * Signs `userId` in and completes the pending request, as every way of signing in on a hosted page
 * ends (password, sign-up, social): a new session id (X-ID-SESS-1: the browser's previous session
 * ends), recorded with the browser's User-Agent and client address `ip` (X-ID-ACCT-3), then the
 * scopes the page listed are granted (X-ID-AZ-2). When the user has a second factor, or the
 * application requires one (X-ID-MFA-4, X-ID-MFA-7), no session starts yet: the browser goes to
 * the second step with its cookie. Returns where to send the browser and the cookie to set.
 * `amr`: the methods of a sign-in that is not a password or social one (a passkey's, X-ID-PK-3);
 * one that already holds `mfa` (a user-verified passkey) is complete without a second step.
 */
export async function signIn(
  request: PendingRequest,
  userId: string,
  headers: RequestHeaders,
  deps: IdentityDeps,
  ip: string,
  how?: SignInRecord,
  amr?: readonly string[],
): Promise<{ location: string; cookie: string }> {
  await refuseDisabled(request, userId, deps);
  const method: FirstFactorMethod = how?.method === "social" ? "fed" : "pwd";
  const first = amr ?? [method];
  if (!first.includes("mfa") && (await deps.factors.secondStepFor(userId, request.application.id))) {
    const value = await deps.factors.beginChallenge(userId, request.id, first);
    return { location: secondFactorPath(request.id), cookie: secondFactorCookie(value, deps) };
  }
  return startSession(request, userId, headers, deps, first, ip, how);
}

/**
 * Starts the session of a complete sign-in made with `amr` and completes the request (X-ID-SESS-1,
 * X-ID-MFA-5); `user.signed_in` is recorded with it (X-ID-AUD-1), as `how` says or from `amr`.
 */
export async function startSession(
  request: PendingRequest,
  userId: string,
  headers: RequestHeaders,
  deps: IdentityDeps,
  amr: readonly string[],
  ip: string,
  how?: SignInRecord,
): Promise<{ location: string; cookie: string }> {
  const record: SignInRecord = {
    method: amr.includes("fed") ? "social" : "password",
    origin: requestOrigin({ ip, headers }),
    ...how,
    applicationId: request.application.id,
  };
  const cookie = parseCookies(headers.cookie)[SESSION_COOKIE];
  const started = await deps.oauth.sessions.start(userId, cookie, amr, sessionDevice(headers, ip), record);
  const location = await completeRequest(request, userId, started.session.authTime, deps, amr, started.session.idHash);
  return { location, cookie: sessionCookie(started.cookieValue, deps) };
}

/** Completes the pending request for a signed-in user (consent, the application's user, the code): where to send the browser. */
export async function completeRequest(
  request: PendingRequest,
  userId: string,
  authTime: number,
  deps: IdentityDeps,
  amr: readonly string[],
  /** The session signed in with: its `sid` goes into the ID tokens (X-ID-LOGOUT-6). */
  sessionIdHash?: string,
): Promise<string> {
  await refuseDisabled(request, userId, deps);
  return deps.oauth.authorization.complete(
    request,
    userId,
    authTime,
    (appId, uid) => deps.accounts.addApplicationUser(appId, uid),
    amr,
    sessionIdHash,
  );
}

/**
 * X-ID-UADM-3: a user an admin disabled for the application's organization gets the 403 page,
 * before any session starts or code is issued. Reached only after the user proved the account (a
 * right password, an upstream sign-in, a session), so it tells nobody else that the email is
 * registered (X-ID-USR-2).
 */
async function refuseDisabled(request: PendingRequest, userId: string, deps: IdentityDeps): Promise<void> {
  if (!(await deps.accounts.blockedFrom(request.application.id, userId))) return;
  throw asError(page(403, accountDisabledPage({ applicationName: request.application.name, branding: request.application.branding })));
}

/** 429 for a password attempt the sign-in throttle refused (X-ID-AZ-3, X-ID-AZ-4): what is limited and when to retry. */
export function refusedPage(refusal: SignInRefusal): Reply {
  const reply = page(429, lockedPage(refusal.retryAfterSeconds, refusal.reason));
  reply.headers["Retry-After"] = String(refusal.retryAfterSeconds);
  return reply;
}

export { clearCookie };
