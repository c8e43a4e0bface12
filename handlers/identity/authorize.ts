/**
 * `GET`/`POST /oauth/authorize` (seed §4.1, §4.2; X-ID-AZ-1..3). What every hosted page shares is in
 * shared/hosted-pages.ts.
 */
import type { RequestHeaders } from "../../server/http/handler-types.ts";
import type { HttpProblem } from "../../server/http/problem.ts";
import type { RawRequest } from "../../server/http/app.ts";
import type { IdentityDeps, IdentityHandlers, IdentityPrincipal } from "./identity-handlers.ts";
import type { PendingRequest } from "./domain/oauth/authorization.ts";
import { consentPage, loginPage } from "./views/authorize.ts";
import { invalidRequestPage } from "./views/messages.ts";
import {
  asError,
  completeRequest,
  csrfOf,
  expired,
  hostedForm,
  page,
  redirect,
  refusedPage,
  requestView,
  secondFactorCookie,
  secondFactorPath,
  send,
  sessionOf,
  signIn,
  type Reply,
} from "./shared/hosted-pages.ts";
import { requestOrigin } from "./shared/request-origin.ts";
import { withPasskeyScript } from "./shared/passkey-pages.ts";

/** The login page again, with a message (wrong password, incomplete form). */
function loginAgain(status: number, r: PendingRequest, headers: RequestHeaders, deps: IdentityDeps, error: string, email?: string): Reply {
  const csrf = csrfOf(headers, deps);
  const reply = page(
    status,
    loginPage({ ...requestView(r, csrf.token, deps), error, ...(email ? { email } : {}) }),
    [r.redirectUri],
    csrf.cookies,
  );
  return withPasskeyScript(reply, deps.oauth.issuer);
}

/** `GET /oauth/authorize` on any query (validated or raw): page, error page or redirect. */
async function authorizeReply(
  query: RawRequest["query"],
  headers: RequestHeaders,
  auth: IdentityPrincipal,
  deps: IdentityDeps,
): Promise<Reply> {
  const outcome = await deps.oauth.authorization.begin(query, sessionOf(auth));
  switch (outcome.kind) {
    case "error-page":
      return page(400, invalidRequestPage(outcome.message));
    case "redirect":
      return redirect(302, outcome.location);
    case "login": {
      const csrf = csrfOf(headers, deps);
      const reply = page(200, loginPage(requestView(outcome.request, csrf.token, deps)), [outcome.request.redirectUri], csrf.cookies);
      return withPasskeyScript(reply, deps.oauth.issuer);
    }
    case "consent": {
      const csrf = csrfOf(headers, deps);
      const view = {
        ...requestView(outcome.request, csrf.token, deps),
        userEmail: outcome.user.email,
        userName: `${outcome.user.first_name} ${outcome.user.last_name}`.trim(),
      };
      return page(200, consentPage(view), [outcome.request.redirectUri], csrf.cookies);
    }
    case "second-factor": {
      // Step-up (X-ID-MFA-6): the session's user, its first factor, on to the second step.
      const value = await deps.factors.beginChallenge(outcome.session.userId, outcome.request.id, outcome.session.amr);
      return redirect(302, secondFactorPath(outcome.request.id), [secondFactorCookie(value, deps)]);
    }
  }
}

/** `POST /oauth/authorize`: login, consent or deny; the login form again when the body broke the contract. */
const submitForm = hostedForm(async ({ form, headers, ip, auth, problem }, deps) => {
  const request = await deps.oauth.authorization.findRequest(form.request_id);
  if (!request) return expired();
  const session = sessionOf(auth) ?? (await deps.oauth.authenticateSession(headers));

  if (form.action === "deny" && !problem) return redirect(303, await deps.oauth.authorization.deny(request));
  if (problem || (form.action !== "login" && form.action !== "consent")) {
    return loginAgain(400, request, headers, deps, "The form was incomplete. Enter your email and password.");
  }
  if (form.action === "consent") {
    if (!session) return loginAgain(400, request, headers, deps, "Sign in to continue.");
    return redirect(303, await completeRequest(request, session.userId, session.authTime, deps, session.amr, session.idHash));
  }

  const email = String(form.email);
  const password = String(form.password);
  const origin = requestOrigin({ ip, headers });
  // The account the email names, if any: the audit log's user of a failed attempt (never shown to the client).
  let account: string | undefined;
  // X-ID-AZ-3, X-ID-AZ-4: an unknown email is throttled exactly like a wrong password.
  const outcome = await deps.oauth.throttle.attempt(
    email,
    ip,
    async () => {
      const found = await deps.accounts.findUserByEmail(email);
      account = found?.id;
      return (await deps.accounts.verifyPassword(found, password)) ? found : undefined;
    },
    (found) => found !== undefined,
  );
  // X-ID-AUD-1: a failure changes nothing else, so it is recorded on its own; the email as typed, never the password.
  const failed = (reason: "invalid_credentials" | "throttled") =>
    deps.audit.record(undefined, {
      type: "user.sign_in_failed",
      actor: { type: "user" },
      userId: account,
      applicationId: request.application.id,
      origin,
      details: { method: "password", reason, email: email.slice(0, 254) },
    });
  if (outcome.refused) {
    await failed("throttled");
    return refusedPage(outcome.refused);
  }
  const user = outcome.result;
  // The same words for an unknown email and a wrong password: no account enumeration.
  if (!user) {
    await failed("invalid_credentials");
    return loginAgain(400, request, headers, deps, "The email or password is wrong.", email);
  }
  const signedIn = await signIn(request, user.id, headers, deps, ip, { method: "password", origin });
  return redirect(303, signedIn.location, [signedIn.cookie]);
});

export const authorizeHandlers: Pick<IdentityHandlers, "authorize" | "submitAuthorization"> = {
  async authorize({ query, headers, auth }, deps) {
    return send(await authorizeReply(query as RawRequest["query"], headers, auth, deps));
  },

  submitAuthorization: submitForm.handler,
};

/** Contract failures of these operations answer in their own format (X-ID-AZ-1): pages and redirects, never a problem. */
export const authorizeProblemMappers = (deps: IdentityDeps) => ({
  authorize: async (_problem: HttpProblem, raw: RawRequest) =>
    asError(await authorizeReply(raw.query, raw.headers, await deps.oauth.authenticateSession(raw.headers), deps)),
  submitAuthorization: submitForm.problemMapper(deps),
});
