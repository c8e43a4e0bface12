/**
 * The second step of a sign-in (`/signin/second-factor`, X-ID-MFA-4), and the enrolment an
 * application that requires a second factor asks of a user without one (X-ID-MFA-7).
 */
import type { RequestHeaders } from "../../server/http/handler-types.ts";
import type { IdentityDeps, IdentityHandlers } from "./identity-handlers.ts";
import type { PendingRequest } from "./domain/oauth/authorization.ts";
import type { FactorChallenge } from "./domain/factors/factors-area.ts";
import { parseCookies } from "./domain/oauth/cookies.ts";
import {
  asError,
  clearSecondFactorCookie,
  csrfOf,
  expired,
  hostedForm,
  page,
  redirect,
  SECOND_FACTOR_COOKIE,
  send,
  startSession,
  type Reply,
} from "./shared/hosted-pages.ts";
import { enrolmentView } from "./shared/qr-code.ts";
import { signInExpiredPage } from "./views/messages.ts";
import { enrolStepPage, recoveryCodesStepPage, secondFactorPage, tooManyCodesPage } from "./views/second-factor.ts";

/** 429 (X-ID-MFA-8): the step's limits; nothing was checked. */
function tooManyCodes(retryAfterSeconds: number): Reply {
  const reply = page(429, tooManyCodesPage(retryAfterSeconds));
  reply.headers["Retry-After"] = String(retryAfterSeconds);
  return reply;
}

/** No sign-in of this request waits for a second factor in this browser. */
const noStep = () => page(400, signInExpiredPage());

/** The request and its step, when both are alive and belong together. */
async function stepOf(requestId: unknown, headers: RequestHeaders, deps: IdentityDeps) {
  const request = await deps.oauth.authorization.findRequest(requestId);
  if (!request) return undefined;
  const challenge = await deps.factors.findChallenge(parseCookies(headers.cookie)[SECOND_FACTOR_COOKIE], request.id);
  return challenge ? { request, challenge } : undefined;
}

/** The step's page: the code form, or enrolment when the user has no factor yet. */
async function stepPage(
  status: number,
  request: PendingRequest,
  challenge: FactorChallenge,
  headers: RequestHeaders,
  deps: IdentityDeps,
  error?: string,
): Promise<Reply> {
  const csrf = csrfOf(headers, deps);
  const view = {
    requestId: request.id,
    csrfToken: csrf.token,
    applicationName: request.application.name,
    branding: request.application.branding,
    ...(error ? { error } : {}),
  };
  if (await deps.factors.hasFactor(challenge.userId)) return page(status, secondFactorPage(view), [request.redirectUri], csrf.cookies);
  const user = await deps.accounts.findUserById(challenge.userId);
  if (!user) return noStep();
  // Enrolment within the sign-in (X-ID-MFA-7): the pending secret again after a wrong code, else a new one.
  const pending = status === 200 ? undefined : await deps.factors.pendingTotp(user, request.application.name);
  const enrolment = pending ?? (await deps.factors.startTotp(user, request.application.name));
  return page(status, enrolStepPage({ ...view, ...(await enrolmentView(enrolment)) }), [request.redirectUri], csrf.cookies);
}

const submission = hostedForm(async ({ form, headers, ip, problem }, deps) => {
  const step = await stepOf(form.request_id, headers, deps);
  if (!step) return expired();
  const { request, challenge } = step;
  const code = typeof form.code === "string" ? form.code : "";
  if (problem || !code) return stepPage(400, request, challenge, headers, deps, "Enter the code.");

  if (!(await deps.factors.hasFactor(challenge.userId))) {
    // Enrolment (X-ID-MFA-7): a current code turns the factor on; the recovery codes are shown once, then on.
    let codes: string[];
    try {
      codes = await deps.factors.confirmTotp(challenge.userId, code);
    } catch {
      return stepPage(400, request, challenge, headers, deps, "The code is wrong. Enter the current code of the app.");
    }
    if (!(await deps.factors.finishChallenge(challenge))) return expired();
    const amr = deps.factors.withSecondFactor(challenge.amr, ["otp"]);
    const done = await startSession(request, challenge.userId, headers, deps, amr, ip);
    const html = recoveryCodesStepPage({
      applicationName: request.application.name,
      branding: request.application.branding,
      codes,
      continueHref: done.location,
    });
    return page(200, html, [request.redirectUri], [done.cookie, clearSecondFactorCookie(deps)]);
  }

  const outcome = await deps.factors.check(challenge.userId, ip, { code });
  if (outcome.refused) return tooManyCodes(outcome.refused.retryAfterSeconds);
  if (!outcome.amr) return stepPage(400, request, challenge, headers, deps, "The code is wrong or was used already.");
  // The step completes once: of two right answers racing, one starts the session.
  if (!(await deps.factors.finishChallenge(challenge))) return expired();
  const done = await startSession(request, challenge.userId, headers, deps, deps.factors.withSecondFactor(challenge.amr, outcome.amr), ip);
  return redirect(303, done.location, [done.cookie, clearSecondFactorCookie(deps)]);
});

export const secondFactorHandlers: Pick<IdentityHandlers, "secondFactorPage" | "submitSecondFactor"> = {
  async secondFactorPage({ query, headers }, deps) {
    const step = await stepOf(query.request_id, headers, deps);
    if (!step) return send(noStep());
    return send(await stepPage(200, step.request, step.challenge, headers, deps));
  },
  submitSecondFactor: submission.handler,
};

export const secondFactorProblemMappers = (deps: IdentityDeps) => ({
  secondFactorPage: async () => asError(noStep()),
  submitSecondFactor: submission.problemMapper(deps),
});
