/**
 * The hosted pages of email verification (X-ID-EVF-2..6): `GET /verify-email` where an
 * authorization waits for the user's address to be verified, `POST /verify-email` that mails the
 * link again, and `GET /verify-email/confirm`, the mailed link.
 */
import type { RequestHeaders } from "../../server/http/handler-types.ts";
import { asProblem } from "../../server/http/problem.ts";
import type { IdentityDeps, IdentityHandlers, IdentityPrincipal } from "./identity-handlers.ts";
import type { PendingRequest } from "./domain/oauth/authorization.ts";
import { verifyEmailPath } from "./domain/oauth/authorization.ts";
import { asError, csrfOf, expired, hostedForm, page, redirect, send, sessionOf, type Reply } from "./shared/hosted-pages.ts";
import { emailVerifiedPage, verificationFailedPage, verificationMailPausedPage, verifyEmailPage } from "./views/email-verification.ts";
import { messagePage } from "./views/messages.ts";
import type { RequestOrigin } from "./domain/audit.ts";
import { requestOrigin } from "./shared/request-origin.ts";

/** The page of a request that is unknown, expired, or not the signed-in browser's: start again from the application. */
const requestExpired = () =>
  page(
    400,
    messagePage({
      title: "Sign-in expired",
      heading: "This sign-in request has expired",
      message: "Go back to the application and start signing in again.",
    }),
  );

const linkFailed = () =>
  page(400, verificationFailedPage("This link does not work", "This verification link is unknown, used or expired. Ask for a new one."));

async function stopPage(
  request: PendingRequest,
  userId: string,
  headers: RequestHeaders,
  deps: IdentityDeps,
  sent: boolean,
): Promise<Reply> {
  const user = await deps.accounts.findUserById(userId);
  if (!user) return requestExpired();
  const csrf = csrfOf(headers, deps);
  const html = verifyEmailPage({
    requestId: request.id,
    csrfToken: csrf.token,
    applicationName: request.application.name,
    branding: request.application.branding,
    email: (await deps.accounts.pendingEmailOf(userId)) ?? user.email,
    continueHref: deps.oauth.authorization.restartUrl(request),
    sent,
  });
  return page(200, html, [], csrf.cookies);
}

/** `POST /verify-email`: a new link (X-ID-EVF-6), then back to the page; verified meanwhile: the authorization continues. */
const resendSubmission = hostedForm(async ({ form, auth, headers, problem }, deps) => {
  if (problem) return expired();
  const request = await deps.oauth.authorization.findRequest(form.request_id);
  const session = sessionOf(auth) ?? (await deps.oauth.authenticateSession(headers));
  if (!request || !session) return expired();
  const continueHref = deps.oauth.authorization.restartUrl(request);
  try {
    await deps.accounts.resendVerification(session.userId, { applicationId: request.application.id, returnTo: continueHref });
  } catch (err) {
    const refusal = asProblem(err);
    if (refusal?.code === "email_already_verified") return redirect(303, continueHref);
    if (refusal?.status !== 429) throw err;
    const retryAfter = Number(refusal.headers["Retry-After"] ?? 60);
    const reply = page(429, verificationMailPausedPage(retryAfter));
    reply.headers["Retry-After"] = String(retryAfter);
    return reply;
  }
  return redirect(303, `${verifyEmailPath(request)}&sent=1`);
});

async function confirmReply(token: string, origin: RequestOrigin, deps: IdentityDeps): Promise<Reply> {
  try {
    const verified = await deps.accounts.confirmEmail(token, origin);
    const application = verified.applicationId ? await deps.accounts.findApplicationById(verified.applicationId) : undefined;
    const continueTo =
      verified.returnTo && application?.enabled ? { href: verified.returnTo, applicationName: application.name } : undefined;
    return page(200, emailVerifiedPage({ email: verified.user.email, ...(continueTo ? { continueTo } : {}) }));
  } catch (err) {
    const refusal = asProblem(err);
    if (refusal?.status === 409) return page(409, verificationFailedPage("This address is taken", refusal.message));
    if (refusal && refusal.status < 500) return linkFailed();
    throw err;
  }
}

export const verifyEmailPagesHandlers: Pick<IdentityHandlers, "verifyEmailPage" | "resendVerificationEmail" | "confirmEmail"> = {
  async verifyEmailPage({ query, headers, auth }, deps) {
    const request = await deps.oauth.authorization.findRequest(query.request_id);
    const session = sessionOf(auth as IdentityPrincipal);
    if (!request || !session) return send(requestExpired());
    return send(await stopPage(request, session.userId, headers, deps, query.sent === "1"));
  },

  resendVerificationEmail: resendSubmission.handler,

  async confirmEmail({ query, ip, headers }, deps) {
    return send(await confirmReply(query.token, requestOrigin({ ip, headers }), deps));
  },
};

/** Contract failures answer as pages (a malformed request id or link), never as problem documents. */
export const verifyEmailPagesProblemMappers = (deps: IdentityDeps) => ({
  verifyEmailPage: async () => asError(requestExpired()),
  resendVerificationEmail: resendSubmission.problemMapper(deps),
  confirmEmail: async () => asError(linkFailed()),
});
