/**
 * The password reset pages (X-ID-RST-1..5): `/forgot-password` (ask for a link), its "check your
 * email" page, `/reset-password` (the link's page and its form) and the page after a reset. The
 * rules are in domain/accounts/password-reset.ts; this module turns them into pages and redirects.
 */
import type { HttpProblem } from "../../server/http/problem.ts";
import type { RawRequest } from "../../server/http/app.ts";
import type { RequestHeaders } from "../../server/http/handler-types.ts";
import { asProblem } from "../../server/http/problem.ts";
import { RESET_LINK_MINUTES } from "./domain/accounts/password-reset.ts";
import type { PendingRequest } from "./domain/oauth/authorization.ts";
import type { IdentityDeps, IdentityHandlers } from "./identity-handlers.ts";
import { requestOrigin } from "./shared/request-origin.ts";
import { asError, clearSessionCookie, csrfOf, hostedForm, page, redirect, send, type Reply } from "./shared/hosted-pages.ts";
import { linkNotValidPage, onlyUnknownParameters } from "./shared/page-queries.ts";
import {
  forgotPasswordPage,
  type ResetFrame,
  resetDonePage,
  resetLinkInvalidPage,
  resetLinkSentPage,
  resetPasswordPage,
} from "./views/password-reset.ts";

/** A query value the contract may not have checked (a problem mapper's raw query): the one string, else nothing. */
const single = (value: unknown): string | undefined => (typeof value === "string" && value.length <= 256 ? value : undefined);

/** The pending authorization request the user came from, if it is still pending. */
const pendingRequest = async (requestId: unknown, deps: IdentityDeps): Promise<PendingRequest | undefined> => {
  const id = single(requestId);
  return id ? deps.oauth.authorization.findRequest(id) : undefined;
};

const frameOf = (request: PendingRequest | undefined): ResetFrame =>
  request ? { applicationName: request.application.name, branding: request.application.branding } : {};

/** The frame of a page about a reset link: the application it was asked from, when it still exists. */
async function frameOfApplication(applicationId: string | null, deps: IdentityDeps): Promise<ResetFrame> {
  const app = applicationId ? await deps.accounts.findApplicationById(applicationId) : undefined;
  return app?.enabled ? { applicationName: app.name, branding: app.branding } : {};
}

function forgotForm(
  status: number,
  request: PendingRequest | undefined,
  headers: RequestHeaders,
  deps: IdentityDeps,
  extra: { email?: string; error?: string } = {},
): Reply {
  const csrf = csrfOf(headers, deps);
  const html = forgotPasswordPage({
    ...frameOf(request),
    csrfToken: csrf.token,
    ...(request ? { requestId: request.id, signInHref: deps.oauth.authorization.restartUrl(request) } : {}),
    ...extra,
  });
  return page(status, html, [], csrf.cookies);
}

const invalidLink = () => page(400, resetLinkInvalidPage(RESET_LINK_MINUTES));

/** The link's form, or the invalid-link page when the token is not usable (never spends it). */
async function resetForm(
  status: number,
  token: unknown,
  headers: RequestHeaders,
  deps: IdentityDeps,
  errors: string[] = [],
): Promise<Reply> {
  const value = single(token);
  const found = value ? await deps.accounts.findUsableResetLink(value) : undefined;
  if (!value || !found) return invalidLink();
  const csrf = csrfOf(headers, deps);
  const html = resetPasswordPage({
    ...(await frameOfApplication(found.reset.application_id, deps)),
    csrfToken: csrf.token,
    token: value,
    email: found.user.email,
    errors,
  });
  return page(status, html, [], csrf.cookies);
}

/** `POST /forgot-password` (X-ID-RST-1): the same redirect for every address; the form again only for what was typed. */
const forgotSubmission = hostedForm(async ({ form, headers, ip, problem }, deps) => {
  const request = await pendingRequest(form.request_id, deps);
  if (problem) {
    const email = single(form.email);
    return forgotForm(400, request, headers, deps, { ...(email ? { email } : {}), error: "Enter a valid email address." });
  }
  await deps.accounts.requestPasswordReset({
    email: String(form.email),
    clientAddress: ip,
    origin: requestOrigin({ ip, headers }),
    ...(request ? { applicationId: request.application.id, returnTo: deps.oauth.authorization.restartUrl(request) } : {}),
  });
  return redirect(303, `/forgot-password/sent${request ? `?request_id=${encodeURIComponent(request.id)}` : ""}`);
});

/** `POST /reset-password` (X-ID-RST-3..5): the new password, then the page after the reset; this browser's session cookie goes too. */
const resetSubmission = hostedForm(async ({ form, headers, ip, problem }, deps) => {
  const passwordRule = "Password: at least 8 characters.";
  if (problem) return resetForm(400, form.token, headers, deps, [passwordRule]);
  let reset: Awaited<ReturnType<IdentityDeps["accounts"]["resetPassword"]>>;
  try {
    reset = await deps.accounts.resetPassword(String(form.token), String(form.password), requestOrigin({ ip, headers }));
  } catch (err) {
    if (asProblem(err)?.status === 400) return resetForm(400, form.token, headers, deps, [passwordRule]);
    throw err;
  }
  if (!reset) return invalidLink();
  return redirect(303, `/reset-password/done?reset=${encodeURIComponent(reset.id)}`, [clearSessionCookie(deps)]);
});

async function sentPage(requestId: unknown, deps: IdentityDeps): Promise<Reply> {
  const request = await pendingRequest(requestId, deps);
  return page(
    200,
    resetLinkSentPage({
      ...frameOf(request),
      minutes: RESET_LINK_MINUTES,
      ...(request ? { signInHref: deps.oauth.authorization.restartUrl(request) } : {}),
    }),
  );
}

async function donePage(resetId: unknown, deps: IdentityDeps): Promise<Reply> {
  const id = single(resetId);
  const reset = id ? await deps.accounts.findCompletedReset(id) : undefined;
  if (!reset) return page(200, resetDonePage({}));
  return page(
    200,
    resetDonePage({
      ...(await frameOfApplication(reset.application_id, deps)),
      ...(reset.return_to ? { signInHref: reset.return_to } : {}),
    }),
  );
}

export const passwordResetHandlers: Pick<
  IdentityHandlers,
  "forgotPasswordPage" | "forgotPassword" | "forgotPasswordSentPage" | "resetPasswordPage" | "resetPassword" | "resetPasswordDonePage"
> = {
  async forgotPasswordPage({ query, headers }, deps) {
    return send(forgotForm(200, await pendingRequest(query.request_id, deps), headers, deps));
  },
  forgotPassword: forgotSubmission.handler,
  async forgotPasswordSentPage({ query }, deps) {
    return send(await sentPage(query.request_id, deps));
  },
  async resetPasswordPage({ query, headers }, deps) {
    return send(await resetForm(200, query.token, headers, deps));
  },
  resetPassword: resetSubmission.handler,
  async resetPasswordDonePage({ query }, deps) {
    return send(await donePage(query.reset, deps));
  },
};

/** Contract failures of these pages answer as pages (what could be read of the query is used), never as problems. */
const askAgain = { href: "/forgot-password", label: "Ask for a reset link" };

export const passwordResetProblemMappers = (deps: IdentityDeps) => ({
  forgotPasswordPage: async (problem: HttpProblem, raw: RawRequest) =>
    asError(
      onlyUnknownParameters(problem)
        ? forgotForm(200, await pendingRequest(raw.query.request_id, deps), raw.headers, deps)
        : linkNotValidPage("Forgot your password?", askAgain),
    ),
  forgotPassword: forgotSubmission.problemMapper(deps),
  forgotPasswordSentPage: async (problem: HttpProblem, raw: RawRequest) =>
    asError(onlyUnknownParameters(problem) ? await sentPage(raw.query.request_id, deps) : linkNotValidPage("Check your email", askAgain)),
  resetPasswordPage: async (_problem: HttpProblem, raw: RawRequest) => asError(await resetForm(200, raw.query.token, raw.headers, deps)),
  resetPassword: resetSubmission.problemMapper(deps),
  resetPasswordDonePage: async (problem: HttpProblem, raw: RawRequest) =>
    asError(
      onlyUnknownParameters(problem)
        ? await donePage(raw.query.reset, deps)
        : linkNotValidPage("Password changed", { href: "/account", label: "Go to your account" }),
    ),
});
