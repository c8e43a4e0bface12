/** Hosted sign-up (`/signup`) and sign-out (`/logout`) pages. */
import type { RequestHeaders } from "../../server/http/handler-types.ts";
import { asProblem, type HttpProblem } from "../../server/http/problem.ts";
import type { RawRequest } from "../../server/http/app.ts";
import {
  asError,
  clearSessionCookie,
  csrfOf,
  csrfValid,
  expired,
  page,
  pageHeaders,
  redirect,
  send,
  sessionCookie,
  sessionOf,
  type Reply,
} from "./shared/hosted-pages.ts";
import type { IdentityDeps, IdentityHandlers, IdentityPrincipal } from "./identity-handlers.ts";
import type { PendingRequest } from "./domain/oauth/authorization.ts";
import { sameOriginHref } from "./domain/client-urls.ts";
import { parseCookies, SESSION_COOKIE } from "./domain/oauth/cookies.ts";
import { logoutPage, signupPage } from "./views/account.ts";
import { lockedPage, messagePage } from "./views/messages.ts";

const FIELD_NAMES: Record<string, string> = { email: "Email", password: "Password", first_name: "First name", last_name: "Last name" };

function signupForm(
  status: number,
  r: PendingRequest,
  headers: RequestHeaders,
  deps: IdentityDeps,
  form: Record<string, unknown>,
  errors: string[],
): Reply {
  const csrf = csrfOf(headers, deps);
  const text = (v: unknown) => (typeof v === "string" ? v : undefined);
  const html = signupPage({
    requestId: r.id,
    csrfToken: csrf.token,
    applicationName: r.application.name,
    branding: r.application.branding,
    signInHref: deps.oauth.authorization.restartUrl(r),
    values: { email: text(form.email), firstName: text(form.first_name), lastName: text(form.last_name) },
    errors,
  });
  return page(status, html, pageHeaders([r.redirectUri], csrf.cookies));
}

/** `POST /signup`; `problem` is set when the body broke the contract (its field errors become messages). */
async function signupReply(body: unknown, headers: RequestHeaders, ip: string, deps: IdentityDeps, problem?: HttpProblem): Promise<Reply> {
  const form = (body && typeof body === "object" ? body : {}) as Record<string, unknown>;
  if (!csrfValid(headers, form.csrf_token, deps)) return expired();
  const request = await deps.oauth.authorization.findRequest(form.request_id);
  if (!request) return expired();
  if (problem) {
    const messages = (problem.errors ?? []).map((e) => {
      const field = e.field.replace(/^body\./, "");
      if (field === "password") return "Password: at least 8 characters.";
      return `${FIELD_NAMES[field] ?? field}: ${FIELD_NAMES[field] ? "enter a valid value." : "is not a field of this form."}`;
    });
    return signupForm(400, request, headers, deps, form, messages.length ? messages : ["Check the form and try again."]);
  }
  try {
    await deps.accounts.checkRegistrationRate(ip);
  } catch (err) {
    const refusal = asProblem(err);
    if (refusal?.status !== 429) throw err;
    const retryAfter = Number(refusal.headers["Retry-After"] ?? 3600);
    const reply = page(429, lockedPage(retryAfter, "signup"), pageHeaders());
    reply.headers["Retry-After"] = String(retryAfter);
    return reply;
  }
  let user: Awaited<ReturnType<typeof deps.accounts.registerUser>>;
  try {
    user = await deps.accounts.registerUser({
      clientId: request.application.clientId,
      email: String(form.email),
      password: String(form.password),
      firstName: String(form.first_name),
      lastName: String(form.last_name),
    });
  } catch (err) {
    const refusal = asProblem(err);
    if (refusal && refusal.status < 500) {
      const message = refusal.code === "email_taken" ? "An account with this email already exists. Sign in instead." : refusal.message;
      return signupForm(400, request, headers, deps, form, [message]);
    }
    throw err;
  }
  const started = await deps.oauth.sessions.start(user.id, parseCookies(headers.cookie)[SESSION_COOKIE]);
  // The sign-up page listed the requested scopes, as the login page does: signing up grants them.
  const location = await deps.oauth.authorization.complete(request, user.id, started.session.authTime, (appId, uid) =>
    deps.accounts.addApplicationUser(appId, uid),
  );
  return redirect(303, location, [sessionCookie(started.cookieValue, deps)]);
}

async function logoutReply(body: unknown, headers: RequestHeaders, deps: IdentityDeps, invalid = false): Promise<Reply> {
  const form = (body && typeof body === "object" ? body : {}) as Record<string, unknown>;
  if (!csrfValid(headers, form.csrf_token, deps)) return expired();
  const invalidForm = () =>
    page(400, messagePage({ title: "Sign out", heading: "This form is not valid", message: "Go back and try again." }), pageHeaders());
  if (invalid) return invalidForm();
  // X-ID-SESS-2: where the browser would really go (the URL parser drops tabs and newlines and
  // reads "\" as "/"), sent as the parser's absolute URL, and only when that is this origin.
  let location = "/logout";
  if (form.return_to !== undefined) {
    const href = typeof form.return_to === "string" ? sameOriginHref(form.return_to, deps.oauth.issuer) : undefined;
    if (!href) return invalidForm();
    location = href;
  }
  await deps.oauth.sessions.end(parseCookies(headers.cookie)[SESSION_COOKIE]);
  return redirect(303, location, [clearSessionCookie(deps)]);
}

async function signedInEmail(auth: IdentityPrincipal, deps: IdentityDeps): Promise<string | undefined> {
  const session = sessionOf(auth);
  return session ? (await deps.accounts.findUserById(session.userId))?.email : undefined;
}

export const accountPagesHandlers: Pick<IdentityHandlers, "signupPage" | "signup" | "logoutPage" | "logout"> = {
  async signupPage({ query, headers }, deps) {
    const request = await deps.oauth.authorization.findRequest(query.request_id);
    if (!request) {
      const html = messagePage({
        title: "Sign-in expired",
        heading: "This sign-in request has expired",
        message: "Go back to the application and start signing in again.",
      });
      return send(page(400, html, pageHeaders()));
    }
    return send(signupForm(200, request, headers, deps, {}, []));
  },

  async signup({ body, headers, ip }, deps) {
    return send(await signupReply(body, headers, ip, deps));
  },

  async logoutPage({ headers, auth }, deps) {
    const csrf = csrfOf(headers, deps);
    const email = await signedInEmail(auth, deps);
    return send(page(200, logoutPage({ csrfToken: csrf.token, ...(email ? { email } : {}) }), pageHeaders([], csrf.cookies)));
  },

  async logout({ body, headers }, deps) {
    return send(await logoutReply(body, headers, deps));
  },
};

export const accountPagesProblemMappers = (deps: IdentityDeps) => ({
  signupPage: async () =>
    asError(
      page(
        400,
        messagePage({
          title: "Sign-in expired",
          heading: "This sign-in request has expired",
          message: "Go back to the application and start signing in again.",
        }),
        pageHeaders(),
      ),
    ),
  signup: async (problem: HttpProblem, raw: RawRequest) => asError(await signupReply(raw.body, raw.headers, raw.ip, deps, problem)),
  logout: async (_problem: HttpProblem, raw: RawRequest) => asError(await logoutReply(raw.body, raw.headers, deps, true)),
});
