/**
 * The second step of a sign-in (`/signin/second-factor`, X-ID-MFA-4), and the enrolment an
 * application that requires a second factor asks of a user without one (X-ID-MFA-7). A user with
 * a passkey may answer the step with it (X-ID-PK-9): the options endpoint below, then the same form.
 */
import type { RequestHeaders } from "../../server/http/handler-types.ts";
import { DomainError } from "../../server/domain/errors.ts";
import { asProblem } from "../../server/http/problem.ts";
import type { IdentityDeps, IdentityHandlers } from "./identity-handlers.ts";
import type { PendingRequest } from "./domain/oauth/authorization.ts";
import type { FactorAuditContext, FactorChallenge } from "./domain/factors/factors-area.ts";
import { parseCookies } from "./domain/oauth/cookies.ts";
import {
  asError,
  clearSecondFactorCookie,
  csrfOf,
  csrfValid,
  expired,
  hostedForm,
  page,
  redirect,
  SECOND_FACTOR_COOKIE,
  send,
  startSession,
  type Reply,
} from "./shared/hosted-pages.ts";
import { withPasskeyScript } from "./shared/passkey-pages.ts";
import { enrolmentView } from "./shared/qr-code.ts";
import { signInExpiredPage } from "./views/messages.ts";
import { enrolStepPage, recoveryCodesStepPage, secondFactorPage, tooManyCodesPage } from "./views/second-factor.ts";
import { requestOrigin } from "./shared/request-origin.ts";

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
  const methods = await deps.factors.stepMethods(challenge.userId);
  if (methods.totp || methods.passkey) {
    // X-ID-PK-9: the code form when there is a code to enter; the passkey form (and its script) when there is a passkey.
    const offered = { code: methods.totp || methods.recoveryCodes || !methods.passkey, passkey: methods.passkey };
    const reply = page(status, secondFactorPage(view, offered), [request.redirectUri], csrf.cookies);
    return methods.passkey ? withPasskeyScript(reply, deps.oauth.issuer) : reply;
  }
  const user = await deps.accounts.findUserById(challenge.userId);
  if (!user) return noStep();
  // Enrolment within the sign-in (X-ID-MFA-7): the pending secret again after a wrong code, else a new one.
  const pending = status === 200 ? undefined : await deps.factors.pendingTotp(user, request.application.name);
  const enrolment = pending ?? (await deps.factors.startTotp(user, request.application.name));
  return page(status, enrolStepPage({ ...view, ...(await enrolmentView(enrolment)) }), [request.redirectUri], csrf.cookies);
}

/** The step passed with `added` methods: it ends once (of two right answers racing, one starts the session), then on. */
async function complete(
  request: PendingRequest,
  challenge: FactorChallenge,
  added: string[],
  headers: RequestHeaders,
  deps: IdentityDeps,
  ip: string,
): Promise<Reply> {
  if (!(await deps.factors.finishChallenge(challenge))) return expired();
  const done = await startSession(request, challenge.userId, headers, deps, deps.factors.withSecondFactor(challenge.amr, added), ip);
  return redirect(303, done.location, [done.cookie, clearSecondFactorCookie(deps)]);
}

/**
 * X-ID-PK-9: the step answered with a passkey: the assertion must answer this step's challenge and
 * be a passkey of the step's user; a refused one counts as a wrong code (X-ID-MFA-8).
 */
async function passkeyStep(
  request: PendingRequest,
  challenge: FactorChallenge,
  credential: string,
  headers: RequestHeaders,
  deps: IdentityDeps,
  ip: string,
  via: FactorAuditContext,
): Promise<Reply> {
  let message = "The passkey could not be verified. Try again.";
  const outcome = await deps.factors.checkPasskey(
    challenge.userId,
    ip,
    async () => {
      try {
        return (await deps.passkeys.authenticate(deps.factors.passkeyBindingOf(challenge), credential, challenge.userId)).amr;
      } catch (err) {
        // A refusal the user can act on is shown; anything else is the server's fault and stays a 500.
        const problem = asProblem(err);
        if (!problem || problem.status >= 500) throw err;
        message = problem.message;
        return undefined;
      }
    },
    via,
  );
  if (outcome.refused) return tooManyCodes(outcome.refused.retryAfterSeconds);
  if (!outcome.amr) return stepPage(400, request, challenge, headers, deps, message);
  return complete(request, challenge, outcome.amr, headers, deps, ip);
}

const submission = hostedForm(async ({ form, headers, ip, problem }, deps) => {
  const step = await stepOf(form.request_id, headers, deps);
  if (!step) return expired();
  const { request, challenge } = step;
  const via = { origin: requestOrigin({ ip, headers }), applicationId: request.application.id };
  if (!problem && typeof form.credential === "string" && form.credential)
    return passkeyStep(request, challenge, form.credential, headers, deps, ip, via);
  const code = typeof form.code === "string" ? form.code : "";
  if (problem || !code) return stepPage(400, request, challenge, headers, deps, "Enter the code.");

  if (!(await deps.factors.hasFactor(challenge.userId)) && !(await deps.factors.hasPasskey(challenge.userId))) {
    // Enrolment (X-ID-MFA-7): a current code turns the factor on; the recovery codes are shown once, then on.
    let codes: string[];
    try {
      codes = await deps.factors.confirmTotp(challenge.userId, code, via);
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

  const outcome = await deps.factors.check(challenge.userId, ip, { code }, via);
  if (outcome.refused) return tooManyCodes(outcome.refused.retryAfterSeconds);
  if (!outcome.amr) return stepPage(400, request, challenge, headers, deps, "The code is wrong or was used already.");
  return complete(request, challenge, outcome.amr, headers, deps, ip);
});

export const secondFactorHandlers: Pick<IdentityHandlers, "secondFactorPage" | "submitSecondFactor" | "passkeySecondFactorOptions"> = {
  async secondFactorPage({ query, headers }, deps) {
    const step = await stepOf(query.request_id, headers, deps);
    if (!step) return send(noStep());
    return send(await stepPage(200, step.request, step.challenge, headers, deps));
  },
  submitSecondFactor: submission.handler,

  /** X-ID-PK-9: request options for the step's user's passkeys, the challenge bound to the step (X-ID-PK-2, X-ID-PK-8). */
  async passkeySecondFactorOptions({ body, headers }, deps) {
    if (!csrfValid(headers, body.csrf_token, deps))
      throw new DomainError("forbidden", "forbidden", "The form has expired. Reload the page.");
    const step = await stepOf(body.request_id, headers, deps);
    if (!step) throw new DomainError("not_found", "not_found", "This sign-in has expired. Go back to the application and start again.");
    const { challenge } = step;
    return {
      status: 200,
      body: { ...(await deps.passkeys.authenticationOptions(deps.factors.passkeyBindingOf(challenge), challenge.userId)) },
    };
  },
};

export const secondFactorProblemMappers = (deps: IdentityDeps) => ({
  secondFactorPage: async () => asError(noStep()),
  submitSecondFactor: submission.problemMapper(deps),
});
