/**
 * OpenID Connect RP-Initiated Logout 1.0 (`/oauth/logout`, X-ID-LOGOUT-1..5): checks the request
 * (domain/oauth/end-session.ts), then ends the browser's session at once, asks for confirmation,
 * or sends the browser on. A request that breaks a rule is the 400 page and ends nothing.
 */
import type { RequestHeaders } from "../../server/http/handler-types.ts";
import { asProblem } from "../../server/http/problem.ts";
import type { RawRequest } from "../../server/http/app.ts";
import type { HttpProblem } from "../../server/http/problem.ts";
import {
  asError,
  clearSessionCookie,
  csrfOf,
  csrfValid,
  expired,
  page,
  redirect,
  send,
  sessionOf,
  type Reply,
} from "./shared/hosted-pages.ts";
import type { IdentityDeps, IdentityHandlers, IdentityPrincipal } from "./identity-handlers.ts";
import type { EndSessionPlan, EndSessionRequest } from "./domain/oauth/end-session.ts";
import { parseCookies, SESSION_COOKIE } from "./domain/oauth/cookies.ts";
import { requestOrigin } from "./shared/request-origin.ts";
import { endSessionConfirmPage, endSessionDonePage, endSessionInvalidPage } from "./views/end-session.ts";

/** The parameters of §2 the confirmation form carries back (`ui_locales` is ignored, so not carried). */
const CARRIED = {
  idTokenHint: "id_token_hint",
  clientId: "client_id",
  postLogoutRedirectUri: "post_logout_redirect_uri",
  state: "state",
} as const;

const text = (v: unknown) => (typeof v === "string" ? v : undefined);

function requestOf(params: Record<string, unknown>): EndSessionRequest {
  return {
    idTokenHint: text(params.id_token_hint) || undefined,
    clientId: text(params.client_id),
    postLogoutRedirectUri: text(params.post_logout_redirect_uri),
    state: text(params.state),
  };
}

interface Call {
  params: Record<string, unknown>;
  method: "GET" | "POST";
  headers: RequestHeaders;
  ip: string;
  auth: IdentityPrincipal;
}

const invalidPage = (message: string) => page(400, endSessionInvalidPage(message));

/** X-ID-LOGOUT-5: where the browser goes once there is no session (any more). */
function done(plan: EndSessionPlan, method: Call["method"], deps: IdentityDeps): Reply {
  const cookies = [clearSessionCookie(deps)];
  if (plan.redirectTo) return redirect(method === "GET" ? 302 : 303, plan.redirectTo, cookies);
  const app = plan.application ? { name: plan.application.name, branding: plan.application.branding } : undefined;
  return page(200, endSessionDonePage(app), [], cookies);
}

/**
 * The longest value of each parameter, as the form's contract states them. The query's contract
 * states none: a value past them in a URL could pass the HTTP server's header limit (431, before any
 * page); checked here instead, the same for both.
 */
const MAX_LENGTH: Readonly<Record<string, number>> = {
  id_token_hint: 8192,
  client_id: 256,
  post_logout_redirect_uri: 2048,
  state: 2048,
  ui_locales: 256,
};

const tooLong = (params: Record<string, unknown>) =>
  Object.entries(MAX_LENGTH).some(([name, max]) => {
    const value = params[name];
    return typeof value === "string" && [...value].length > max;
  });

async function answer(call: Call, deps: IdentityDeps): Promise<Reply> {
  if (tooLong(call.params)) return invalidPage("A parameter of this sign-out link is too long.");
  const confirming = call.method === "POST" && call.params.confirm !== undefined;
  // X-ID-LOGOUT-4: a confirmation is a form of ours; a forged one ends nothing.
  if (confirming && !csrfValid(call.headers, call.params.csrf_token, deps)) return expired();
  const request = requestOf(call.params);
  let plan: EndSessionPlan;
  try {
    plan = await deps.oauth.endSession.check(request);
  } catch (err) {
    const refusal = asProblem(err);
    if (refusal && refusal.status === 400) return invalidPage(refusal.message);
    throw err;
  }
  const session = sessionOf(call.auth);
  if (session && !confirming && plan.hintSubject !== session.userId) {
    const csrf = csrfOf(call.headers, deps);
    const email = (await deps.accounts.findUserById(session.userId))?.email ?? "";
    const carried: Record<string, string> = {};
    for (const [key, field] of Object.entries(CARRIED)) {
      const value = request[key as keyof EndSessionRequest];
      if (value !== undefined) carried[field] = value;
    }
    const app = plan.application ? { name: plan.application.name, branding: plan.application.branding } : undefined;
    return page(200, endSessionConfirmPage({ csrfToken: csrf.token, email, application: app, carried }), [], csrf.cookies);
  }
  if (session) await deps.oauth.sessions.end(parseCookies(call.headers.cookie)[SESSION_COOKIE], requestOrigin(call));
  return done(plan, call.method, deps);
}

/** A body or query that broke the contract (a parameter too long): the 400 page, nothing ended. */
const contractProblem = (_problem: HttpProblem, _raw: RawRequest) =>
  asError(invalidPage("A parameter of this sign-out link is not valid."));

export const endSessionHandlers: Pick<IdentityHandlers, "endSession" | "endSessionSubmit"> = {
  async endSession({ query, headers, ip, auth }, deps) {
    return send(await answer({ params: query as Record<string, unknown>, method: "GET", headers, ip, auth }, deps));
  },
  async endSessionSubmit({ body, headers, ip, auth }, deps) {
    return send(await answer({ params: body as Record<string, unknown>, method: "POST", headers, ip, auth }, deps));
  },
};

export const endSessionProblemMappers = () => ({ endSession: contractProblem, endSessionSubmit: contractProblem });
