/**
 * The signed-in user's Security page (`/account/security`, X-ID-MFA-2, X-ID-MFA-3): set up and
 * remove the authenticator app, make new recovery codes. Secrets and recovery codes are shown in
 * the answer to the POST that made them and never again.
 */
import type { RawRequest } from "../../server/http/app.ts";
import type { RequestHeaders } from "../../server/http/handler-types.ts";
import { asProblem, type HttpProblem } from "../../server/http/problem.ts";
import { accountSignInPath, SECURITY_PATH } from "./domain/account-client.ts";
import type { IdentityDeps, IdentityHandlers, IdentityPrincipal } from "./identity-handlers.ts";
import type { UserRow } from "./storage/schema.ts";
import { asError, csrfOf, hostedForm, page, redirect, send, sessionOf, type Reply } from "./shared/hosted-pages.ts";
import { enrolmentView } from "./shared/qr-code.ts";
import { securityPage, type SecurityView } from "./views/account-security.ts";
import { signInFirstPage } from "./views/messages.ts";
import { tooManyCodesPage } from "./views/second-factor.ts";
import { requestOrigin } from "./shared/request-origin.ts";
import { linkNotValidPage, onlyUnknownParameters } from "./shared/page-queries.ts";

/** The name authenticator apps show beside the account. */
const ISSUER_NAME = "Identity";

const signedOut = () => page(401, signInFirstPage("manage two-step verification", SECURITY_PATH));

async function userOf(auth: IdentityPrincipal, deps: IdentityDeps): Promise<UserRow | undefined> {
  const session = sessionOf(auth);
  return session ? deps.accounts.findUserById(session.userId) : undefined;
}

async function render(status: number, user: UserRow, headers: RequestHeaders, deps: IdentityDeps, extra: Partial<SecurityView> = {}) {
  const csrf = csrfOf(headers, deps);
  const view: SecurityView = { csrfToken: csrf.token, email: user.email, status: await deps.factors.status(user.id), ...extra };
  return page(status, securityPage(view), [], csrf.cookies);
}

/** A refusal of the domain as the page: 429 for the limits (X-ID-MFA-8), the page with its message for the rest. */
async function refusal(
  err: unknown,
  user: UserRow,
  headers: RequestHeaders,
  deps: IdentityDeps,
  extra: Partial<SecurityView> = {},
): Promise<Reply> {
  const problem = asProblem(err);
  if (!problem || problem.status >= 500) throw err;
  if (problem.status === 429) {
    const retryAfter = Number(problem.headers["Retry-After"] ?? 60);
    const reply = page(429, tooManyCodesPage(retryAfter));
    reply.headers["Retry-After"] = String(retryAfter);
    return reply;
  }
  return render(400, user, headers, deps, { ...extra, error: problem.message });
}

const submission = hostedForm(async ({ form, headers, ip, auth, problem }, deps) => {
  const user = await userOf(auth ?? (await deps.oauth.authenticateSession(headers)), deps);
  if (!user) return signedOut();
  if (problem) return render(400, user, headers, deps, { error: "The form was not valid. Try again." });
  const text = (v: unknown) => (typeof v === "string" && v !== "" ? v : undefined);
  // The security page belongs to no application: its events are the account's own (X-ID-AUD-3).
  const via = { origin: requestOrigin({ ip, headers }) };
  const proof = {
    ...(text(form.password) ? { password: text(form.password)! } : {}),
    ...(text(form.code) ? { code: text(form.code)! } : {}),
  };
  switch (form.action) {
    case "start":
      try {
        return render(200, user, headers, deps, { enrolment: await enrolmentView(await deps.factors.startTotp(user, ISSUER_NAME)) });
      } catch (err) {
        return refusal(err, user, headers, deps);
      }
    case "confirm":
      try {
        const recoveryCodes = await deps.factors.confirmTotp(user.id, text(form.code) ?? "", via);
        return render(200, user, headers, deps, { recoveryCodes, notice: "Two-step verification is on." });
      } catch (err) {
        // The same secret again, so the person can try the next code.
        const pending = await deps.factors.pendingTotp(user, ISSUER_NAME);
        return refusal(err, user, headers, deps, pending ? { enrolment: await enrolmentView(pending) } : {});
      }
    case "regenerate":
      try {
        const recoveryCodes = await deps.factors.regenerateRecoveryCodes(user, ip, proof, via);
        return render(200, user, headers, deps, { recoveryCodes, notice: "New recovery codes: the old ones no longer work." });
      } catch (err) {
        return refusal(err, user, headers, deps);
      }
    default:
      try {
        await deps.factors.removeTotp(user, ip, proof, via);
        return render(200, user, headers, deps, { notice: "The authenticator app was removed." });
      } catch (err) {
        return refusal(err, user, headers, deps);
      }
  }
});

/**
 * `GET /account/security` on any query (validated or not): the page, the way to sign in through the
 * account client (X-ID-MFA-10), or the return from it. A cancelled sign-in is the 401 page, so a
 * browser that will not sign in is never sent round again.
 */
async function securityReply(query: RawRequest["query"], headers: RequestHeaders, auth: IdentityPrincipal, deps: IdentityDeps) {
  const user = await userOf(auth ?? (await deps.oauth.authenticateSession(headers)), deps);
  const returning = query.code !== undefined || query.state !== undefined || query.iss !== undefined;
  if (user) return returning || query.error !== undefined ? redirect(302, SECURITY_PATH) : render(200, user, headers, deps);
  if (query.error !== undefined) return signedOut();
  return redirect(302, accountSignInPath(deps.oauth.issuer, SECURITY_PATH));
}

export const accountSecurityHandlers: Pick<IdentityHandlers, "securityPage" | "updateSecurity"> = {
  async securityPage({ query, headers, auth }, deps) {
    return send(await securityReply(query as RawRequest["query"], headers, auth, deps));
  },
  updateSecurity: submission.handler,
};

export const accountSecurityProblemMappers = (deps: IdentityDeps) => ({
  securityPage: async (problem: HttpProblem, raw: RawRequest) =>
    asError(
      onlyUnknownParameters(problem)
        ? await securityReply({}, raw.headers, undefined, deps)
        : linkNotValidPage("Security", { href: "/account/security", label: "Go to the Security page" }),
    ),
  updateSecurity: submission.problemMapper(deps),
});
