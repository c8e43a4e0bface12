/**
 * `GET`/`POST /oauth/authorize` (seed §4.1, §4.2; X-ID-AZ-1..3), plus the HTTP side every hosted
 * page shares: security headers, the CSRF cookie, redirects, and error pages thrown as ready
 * responses (their statuses are not "success" in the typed handler map).
 */
import type { SignInRefusal } from "../../server/security/sign-in-throttle.ts";
import { randomSecret } from "../../server/security/tokens.ts";
import { HttpResponseError, type HttpProblem } from "../../server/http/problem.ts";
import type { RawRequest } from "../../server/http/app.ts";
import type { IdentityDeps, IdentityHandlers, IdentityPrincipal } from "./identity-handlers.ts";
import type { PendingRequest } from "./domain/oauth/authorization.ts";
import { clearCookie, CSRF_COOKIE, parseCookies, serializeCookie, SESSION_COOKIE } from "./domain/oauth/cookies.ts";
import { consentPage, loginPage, type RequestView } from "./views/authorize.ts";
import { expiredFormPage, invalidRequestPage, lockedPage } from "./views/messages.ts";
import type { Session } from "./domain/oauth/sessions.ts";

type Headers = Record<string, string | string[] | undefined>;

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
export function pageHeaders(formTargets: string[] = [], cookies: string[] = []): Record<string, string | string[]> {
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

export const page = (status: number, html: string, headers: Record<string, string | string[]>): Reply => ({
  status,
  headers,
  body: html,
  contentType: "text/html; charset=utf-8",
});

export const redirect = (status: 302 | 303, location: string, cookies: string[] = []): Reply => ({
  status,
  headers: { Location: location, "Cache-Control": "no-store", "Referrer-Policy": "no-referrer", ...(cookies.length ? { "Set-Cookie": cookies } : {}) },
});

/** Success statuses are returned; error pages travel as HttpResponseError (their statuses are not in the typed success union). */
export function send<T>(reply: Reply): T {
  if (reply.status >= 400) throw new HttpResponseError(reply.status, reply.body, { headers: reply.headers, contentType: reply.contentType ?? "text/html; charset=utf-8" });
  return reply as T;
}

export const asError = (reply: Reply) => new HttpResponseError(reply.status, reply.body, { headers: reply.headers, contentType: reply.contentType ?? "text/html; charset=utf-8" });

/** The browser's CSRF cookie value, made (and set) when it has none yet. */
export function csrfOf(headers: Headers, deps: IdentityDeps): { token: string; cookies: string[] } {
  const existing = parseCookies(headers.cookie)[CSRF_COOKIE];
  if (existing && /^[A-Za-z0-9_-]{43}$/.test(existing)) return { token: deps.oauth.secrets.csrfToken(existing), cookies: [] };
  const value = randomSecret(32);
  return { token: deps.oauth.secrets.csrfToken(value), cookies: [serializeCookie(CSRF_COOKIE, value, { secure: deps.oauth.secureCookies })] };
}

export const csrfValid = (headers: Headers, token: unknown, deps: IdentityDeps) =>
  deps.oauth.secrets.csrfValid(parseCookies(headers.cookie)[CSRF_COOKIE], token);

export const sessionCookie = (value: string, deps: IdentityDeps) =>
  serializeCookie(SESSION_COOKIE, value, { secure: deps.oauth.secureCookies, maxAgeSeconds: 7 * 24 * 3600 });
export const clearSessionCookie = (deps: IdentityDeps) => clearCookie(SESSION_COOKIE, { secure: deps.oauth.secureCookies });

export const sessionOf = (auth: IdentityPrincipal): Session | undefined => (auth?.kind === "session" ? auth : undefined);

/** 403, never a redirect: a forged, stale or foreign form (CSRF) or an unknown or expired request. */
export const expired = () => page(403, expiredFormPage(), pageHeaders());

/** The view of the login and consent pages of a request. */
export function requestView(r: PendingRequest, csrfToken: string, deps: IdentityDeps): RequestView {
  const configured = deps.accounts.configuredProviders();
  return {
    requestId: r.id,
    csrfToken,
    applicationName: r.application.name,
    branding: r.application.branding,
    scopes: r.scopes,
    // Enabled for this application AND configured on this deployment, and no other (ID-AZ-7).
    providers: configured.filter((p) => r.application.enabledProviders.includes(p.id)).map((p) => ({ id: p.id, name: p.name })),
  };
}

/** The login page again, with a message (wrong password, incomplete form). */
function loginAgain(status: number, r: PendingRequest, headers: Headers, deps: IdentityDeps, error: string, email?: string): Reply {
  const csrf = csrfOf(headers, deps);
  return page(status, loginPage({ ...requestView(r, csrf.token, deps), error, ...(email ? { email } : {}) }), pageHeaders([r.redirectUri], csrf.cookies));
}

/** 429 for a password attempt the sign-in throttle refused (X-ID-AZ-3, X-ID-AZ-4): what is limited and when to retry. */
export function refusedPage(refusal: SignInRefusal): Reply {
  const reply = page(429, lockedPage(refusal.retryAfterSeconds, refusal.reason), pageHeaders());
  reply.headers["Retry-After"] = String(refusal.retryAfterSeconds);
  return reply;
}

/** `GET /oauth/authorize` on any query (validated or raw): page, error page or redirect. */
async function authorizeReply(query: RawRequest["query"], headers: Headers, auth: IdentityPrincipal, deps: IdentityDeps): Promise<Reply> {
  const outcome = await deps.oauth.authorization.begin(query, sessionOf(auth));
  switch (outcome.kind) {
    case "error-page":
      return page(400, invalidRequestPage(outcome.message), pageHeaders());
    case "redirect":
      return redirect(302, outcome.location);
    case "login": {
      const csrf = csrfOf(headers, deps);
      return page(200, loginPage(requestView(outcome.request, csrf.token, deps)), pageHeaders([outcome.request.redirectUri], csrf.cookies));
    }
    case "consent": {
      const csrf = csrfOf(headers, deps);
      const view = { ...requestView(outcome.request, csrf.token, deps), userEmail: outcome.user.email, userName: `${outcome.user.first_name} ${outcome.user.last_name}`.trim() };
      return page(200, consentPage(view), pageHeaders([outcome.request.redirectUri], csrf.cookies));
    }
  }
}

/** `POST /oauth/authorize`: login, consent or deny. `invalid` is set when the body broke the contract. */
async function submitReply(body: unknown, headers: Headers, ip: string, auth: IdentityPrincipal, deps: IdentityDeps, invalid = false): Promise<Reply> {
  const form = (body && typeof body === "object" ? body : {}) as Record<string, unknown>;
  if (!csrfValid(headers, form.csrf_token, deps)) return expired();
  const request = await deps.oauth.authorization.findRequest(form.request_id);
  if (!request) return expired();
  const session = sessionOf(auth) ?? (await deps.oauth.authenticateSession(headers));

  if (form.action === "deny" && !invalid) return redirect(303, await deps.oauth.authorization.deny(request));
  if (invalid || (form.action !== "login" && form.action !== "consent")) {
    return loginAgain(400, request, headers, deps, "The form was incomplete. Enter your email and password.");
  }
  const complete = (userId: string, authTime: number) =>
    deps.oauth.authorization.complete(request, userId, authTime, (appId, uid) => deps.accounts.addApplicationUser(appId, uid));

  if (form.action === "consent") {
    if (!session) return loginAgain(400, request, headers, deps, "Sign in to continue.");
    return redirect(303, await complete(session.userId, session.authTime));
  }

  const email = String(form.email);
  const password = String(form.password);
  // X-ID-AZ-3, X-ID-AZ-4: an unknown email is throttled exactly like a wrong password.
  const outcome = await deps.oauth.throttle.attempt(
    email,
    ip,
    async () => {
      const found = await deps.accounts.findUserByEmail(email);
      return (await deps.accounts.verifyPassword(found, password)) ? found : undefined;
    },
    (found) => found !== undefined,
  );
  if (outcome.refused) return refusedPage(outcome.refused);
  const user = outcome.result;
  // The same words for an unknown email and a wrong password: no account enumeration.
  if (!user) return loginAgain(400, request, headers, deps, "The email or password is wrong.", email);
  // A new session id at every sign-in (X-ID-SESS-1); the browser's previous session ends.
  const started = await deps.oauth.sessions.start(user.id, parseCookies(headers.cookie)[SESSION_COOKIE]);
  return redirect(303, await complete(user.id, started.session.authTime), [sessionCookie(started.cookieValue, deps)]);
}

export const authorizeHandlers: Pick<IdentityHandlers, "authorize" | "submitAuthorization"> = {
  async authorize({ query, headers, auth }, deps) {
    return send(await authorizeReply(query as RawRequest["query"], headers, auth, deps));
  },

  async submitAuthorization({ body, headers, ip, auth }, deps) {
    return send(await submitReply(body, headers, ip, auth, deps));
  },
};

/** Contract failures of these operations answer in their own format (X-ID-AZ-1): pages and redirects, never a problem. */
export const authorizeProblemMappers = (deps: IdentityDeps) => ({
  authorize: async (_problem: HttpProblem, raw: RawRequest) => asError(await authorizeReply(raw.query, raw.headers, await deps.oauth.authenticateSession(raw.headers), deps)),
  submitAuthorization: async (_problem: HttpProblem, raw: RawRequest) =>
    asError(await submitReply(raw.body, raw.headers, raw.ip, await deps.oauth.authenticateSession(raw.headers), deps, true)),
});

export { clearCookie };
