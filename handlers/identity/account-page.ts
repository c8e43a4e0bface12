/**
 * The signed-in user's account page (`/account`, X-ID-ACCT-1..6): the page, its sign-in through the
 * built-in `identity-account` client, and its forms. Each form checks the CSRF token first
 * (`hostedForm`), acts on the session's own user only, and answers 303 to `/account?notice=…`
 * (POST-redirect-GET); a refused form is the page again with 400 and what to fix.
 */
import type { RawRequest } from "../../server/http/app.ts";
import type { RequestHeaders } from "../../server/http/handler-types.ts";
import type { HttpProblem } from "../../server/http/problem.ts";
import { accountSignInPath } from "./domain/account-client.ts";
import type { ConfirmedOutcome } from "./domain/oauth/own-account.ts";
import { parseCookies, SESSION_COOKIE } from "./domain/oauth/cookies.ts";
import type { Session } from "./domain/oauth/sessions.ts";
import type { IdentityDeps, IdentityHandlers, IdentityPrincipal } from "./identity-handlers.ts";
import {
  asError,
  clearSessionCookie,
  csrfOf,
  hostedForm,
  page,
  redirect,
  refusedPage,
  send,
  sessionCookie,
  sessionDevice,
  sessionOf,
  type FormPost,
  type Reply,
} from "./shared/hosted-pages.ts";
import { type AccountNotice, NOTICES, accountPage, accountSignedOutPage } from "./views/account-page.ts";
import { requestOrigin } from "./shared/request-origin.ts";
import { linkNotValidPage, onlyUnknownParameters } from "./shared/page-queries.ts";

const ACCOUNT = "/account";
const noticeOf = (value: unknown): AccountNotice | undefined =>
  typeof value === "string" && Object.hasOwn(NOTICES, value) ? (value as AccountNotice) : undefined;
const afterForm = (notice: AccountNotice, cookies: string[] = []) => redirect(303, `${ACCOUNT}?notice=${notice}`, cookies);

/** The page for the session's user, with a notice or the errors of a refused form; undefined when the user is gone. */
async function renderAccount(
  status: number,
  session: Session,
  headers: RequestHeaders,
  deps: IdentityDeps,
  o: { notice?: AccountNotice; errors?: string[] } = {},
): Promise<Reply | undefined> {
  const overview = await deps.oauth.account.overview(session);
  if (!overview) return undefined;
  const csrf = csrfOf(headers, deps);
  return page(status, accountPage({ overview, csrfToken: csrf.token, ...o }), [], csrf.cookies);
}

/** `GET /account` on any query (validated or not): the page, the way to sign in, or the return from it. */
async function accountReply(
  query: RawRequest["query"],
  headers: RequestHeaders,
  auth: IdentityPrincipal,
  deps: IdentityDeps,
): Promise<Reply> {
  const session = sessionOf(auth) ?? (await deps.oauth.authenticateSession(headers));
  const notice = noticeOf(query.notice);
  if (session) {
    // Back from the account client's sign-in: the session is what counted; the code leaves the address bar.
    if (query.code !== undefined || query.state !== undefined || query.iss !== undefined || query.error !== undefined)
      return redirect(302, ACCOUNT);
    const reply = await renderAccount(200, session, headers, deps, notice ? { notice } : {});
    if (reply) return reply;
  }
  // A cancelled sign-in or a finished action says so rather than starting another sign-in.
  if (query.error !== undefined || notice) return page(200, accountSignedOutPage(notice));
  return redirect(302, accountSignInPath(deps.oauth.issuer));
}

/**
 * An account form: the session (the handler's, or the cookie's when a problem mapper answers), the
 * form again with 400 when the body broke the contract, else `act`. Without a session: 303 to the
 * page, which signs the browser in; nothing is done.
 */
function accountForm(invalidMessage: string, act: (post: FormPost, session: Session, deps: IdentityDeps) => Promise<Reply>) {
  return hostedForm(async (post, deps) => {
    const session = sessionOf(post.auth) ?? (await deps.oauth.authenticateSession(post.headers));
    if (!session) return redirect(303, ACCOUNT);
    if (post.problem)
      return (await renderAccount(400, session, post.headers, deps, { errors: [invalidMessage] })) ?? redirect(303, ACCOUNT);
    return act(post, session, deps);
  });
}

/** A password-checked action that did not happen: the page again saying why, or the throttle's 429. */
async function notConfirmed(
  outcome: Exclude<ConfirmedOutcome<unknown>, { kind: "done" }>,
  post: FormPost,
  session: Session,
  deps: IdentityDeps,
) {
  if (outcome.kind === "refused") return refusedPage(outcome.refusal);
  if (outcome.kind === "gone") return redirect(303, ACCOUNT, [clearSessionCookie(deps)]);
  const message = {
    "wrong-password": "The password is wrong.",
    "no-password": "Your account has no password: it signs in through another provider.",
    "changed-meanwhile": "Your password was changed meanwhile. Reload the page and try again.",
  }[outcome.kind];
  return (await renderAccount(400, session, post.headers, deps, { errors: [message] })) ?? redirect(303, ACCOUNT);
}

const revokeApplication = accountForm("Choose an application from the list.", async (post, session, deps) => {
  await deps.oauth.account.revokeApplication(session.userId, String(post.form.application_id), requestOrigin(post));
  return afterForm("application-revoked");
});

const endSession = accountForm("Choose a session from the list.", async (post, session, deps) => {
  const { endedCurrent } = await deps.oauth.account.endSession(session, String(post.form.session), requestOrigin(post));
  return endedCurrent ? afterForm("signed-out", [clearSessionCookie(deps)]) : afterForm("session-ended");
});

const changePassword = accountForm("Enter your current password and a new one of at least 8 characters.", async (post, session, deps) => {
  const { form, headers, ip } = post;
  const outcome = await deps.oauth.account.changePassword(
    session,
    String(form.current_password),
    String(form.new_password),
    ip,
    requestOrigin(post),
  );
  if (outcome.kind !== "done") return notConfirmed(outcome, post, session, deps);
  // The browser that changed the password stays signed in, under a new session id (X-ID-ACCT-5).
  const previous = parseCookies(headers.cookie)[SESSION_COOKIE];
  const started = await deps.oauth.sessions.start(session.userId, previous, session.amr, sessionDevice(headers, ip));
  return afterForm("password-changed", [sessionCookie(started.cookieValue, deps)]);
});

const deleteAccount = accountForm("Enter your password to delete your account.", async (post, session, deps) => {
  const { form, ip } = post;
  const confirmation = {
    ...(typeof form.password === "string" ? { password: form.password } : {}),
    ...(typeof form.email === "string" ? { email: form.email } : {}),
  };
  const outcome = await deps.oauth.account.deleteAccount(session, confirmation, ip, requestOrigin(post));
  if (outcome.kind !== "done") return notConfirmed(outcome, post, session, deps);
  return afterForm("account-deleted", [clearSessionCookie(deps)]);
});

export const accountPageHandlers: Pick<
  IdentityHandlers,
  "accountPage" | "revokeAccountApplication" | "endAccountSession" | "changeAccountPassword" | "deleteAccount"
> = {
  async accountPage({ query, headers, auth }, deps) {
    return send(await accountReply(query as RawRequest["query"], headers, auth, deps));
  },
  revokeAccountApplication: revokeApplication.handler,
  endAccountSession: endSession.handler,
  changeAccountPassword: changePassword.handler,
  deleteAccount: deleteAccount.handler,
};

/** Contract failures of the account page answer as pages (X-ID-ACCT-1), never as problem documents. */
export const accountPageProblemMappers = (deps: IdentityDeps) => ({
  accountPage: async (problem: HttpProblem, raw: RawRequest) =>
    asError(
      onlyUnknownParameters(problem)
        ? await accountReply({}, raw.headers, undefined, deps)
        : linkNotValidPage("Your account", { href: ACCOUNT, label: "Go to your account" }),
    ),
  revokeAccountApplication: revokeApplication.problemMapper(deps),
  endAccountSession: endSession.problemMapper(deps),
  changeAccountPassword: changePassword.problemMapper(deps),
  deleteAccount: deleteAccount.problemMapper(deps),
});
