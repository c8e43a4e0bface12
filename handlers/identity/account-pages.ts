/** Hosted sign-up (`/signup`) and sign-out (`/logout`) pages. */
import type { RequestHeaders } from "../../server/http/handler-types.ts";
import { asProblem } from "../../server/http/problem.ts";
import {
  asError,
  clearSessionCookie,
  csrfOf,
  expired,
  hostedForm,
  page,
  redirect,
  send,
  sessionOf,
  signIn,
  type Reply,
} from "./shared/hosted-pages.ts";
import type { IdentityDeps, IdentityHandlers, IdentityPrincipal } from "./identity-handlers.ts";
import type { PendingRequest } from "./domain/oauth/authorization.ts";
import { sameOriginHref } from "./domain/client-urls.ts";
import { requestOrigin } from "./shared/request-origin.ts";
import { parseCookies, SESSION_COOKIE } from "./domain/oauth/cookies.ts";
import { logoutPage, signupPage } from "./views/account.ts";
import { lockedPage, messagePage, signInExpiredPage } from "./views/messages.ts";

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
  return page(status, html, [r.redirectUri], csrf.cookies);
}

/** `POST /signup`; the form again when the body broke the contract (its field errors become messages). */
const signupSubmission = hostedForm(async ({ form, headers, ip, problem }, deps) => {
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
    const reply = page(429, lockedPage(retryAfter, "signup"));
    reply.headers["Retry-After"] = String(retryAfter);
    return reply;
  }
  let user: Awaited<ReturnType<typeof deps.accounts.registerUser>>;
  try {
    user = await deps.accounts.registerUser(
      {
        clientId: request.application.clientId,
        email: String(form.email),
        password: String(form.password),
        firstName: String(form.first_name),
        lastName: String(form.last_name),
      },
      requestOrigin({ ip, headers }),
    );
  } catch (err) {
    const refusal = asProblem(err);
    if (refusal && refusal.status < 500) {
      const message = refusal.code === "email_taken" ? "An account with this email already exists. Sign in instead." : refusal.message;
      return signupForm(400, request, headers, deps, form, [message]);
    }
    throw err;
  }
  // The sign-up page listed the requested scopes, as the login page does: signing up grants them.
  const signedIn = await signIn(request, user.id, headers, deps, ip, { method: "sign_up", origin: requestOrigin({ ip, headers }) });
  return redirect(303, signedIn.location, [signedIn.cookie]);
});

/** `POST /logout`: ends the browser's session; a form that broke the contract ends nothing. */
const logoutSubmission = hostedForm(async ({ form, headers, ip, problem }, deps) => {
  const invalidForm = () =>
    page(400, messagePage({ title: "Sign out", heading: "This form is not valid", message: "Go back and try again." }));
  if (problem) return invalidForm();
  // X-ID-SESS-2: where the browser would really go (the URL parser drops tabs and newlines and
  // reads "\" as "/"), sent as the parser's absolute URL, and only when that is this origin.
  let location = "/logout";
  if (form.return_to !== undefined) {
    const href = typeof form.return_to === "string" ? sameOriginHref(form.return_to, deps.oauth.issuer) : undefined;
    if (!href) return invalidForm();
    location = href;
  }
  await deps.oauth.sessions.end(parseCookies(headers.cookie)[SESSION_COOKIE], requestOrigin({ ip, headers }));
  return redirect(303, location, [clearSessionCookie(deps)]);
});

/** The sign-up page of a request that is unknown or expired. */
const requestExpired = () => page(400, signInExpiredPage());

async function signedInEmail(auth: IdentityPrincipal, deps: IdentityDeps): Promise<string | undefined> {
  const session = sessionOf(auth);
  return session ? (await deps.accounts.findUserById(session.userId))?.email : undefined;
}

export const accountPagesHandlers: Pick<IdentityHandlers, "signupPage" | "signup" | "logoutPage" | "logout"> = {
  async signupPage({ query, headers }, deps) {
    const request = await deps.oauth.authorization.findRequest(query.request_id);
    if (!request) return send(requestExpired());
    return send(signupForm(200, request, headers, deps, {}, []));
  },

  signup: signupSubmission.handler,

  async logoutPage({ headers, auth }, deps) {
    const csrf = csrfOf(headers, deps);
    const email = await signedInEmail(auth, deps);
    return send(page(200, logoutPage({ csrfToken: csrf.token, ...(email ? { email } : {}) }), [], csrf.cookies));
  },

  logout: logoutSubmission.handler,
};

export const accountPagesProblemMappers = (deps: IdentityDeps) => ({
  signupPage: async () => asError(requestExpired()),
  signup: signupSubmission.problemMapper(deps),
  logout: logoutSubmission.problemMapper(deps),
});
