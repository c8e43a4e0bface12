/**
 * The device authorization grant's endpoint and verification page (RFC 8628; X-ID-DEV-1..4).
 * The endpoint answers as the token endpoint does: JSON with `Cache-Control: no-store`, RFC 6749
 * §5.2 errors (401 for `invalid_client`). The page signs its user in through the account client
 * first (as the account page does), then asks for the code, then for the decision.
 */
import type { RawRequest } from "../../server/http/app.ts";
import type { RequestHeaders } from "../../server/http/handler-types.ts";
import { asProblem, HttpResponseError, type HttpProblem } from "../../server/http/problem.ts";
import { accountSignInPath, DEVICE_VERIFICATION_PATH } from "./domain/account-client.ts";
import { authenticateClient, readClientCredentials } from "./domain/oauth/client-auth.ts";
import { invalidRequest, OAuthError } from "./domain/oauth/errors.ts";
import type { Session } from "./domain/oauth/sessions.ts";
import { describeScope } from "./domain/oauth/scopes.ts";
import { formatUserCode, normaliseUserCode } from "./domain/oauth/device/user-code.ts";
import type { IdentityDeps, IdentityHandlers, IdentityPrincipal } from "./identity-handlers.ts";
import { asError, csrfOf, hostedForm, page, redirect, send, sessionOf, type Reply } from "./shared/hosted-pages.ts";
import { NO_STORE, oauthErrorResponse, readOAuthForm } from "./shared/oauth-form.ts";
import { linkNotValidPage, onlyUnknownParameters } from "./shared/page-queries.ts";
import { deviceCodePage, deviceConsentPage, deviceDonePage } from "./views/device-verification.ts";
import { messagePage, signInFirstPage } from "./views/messages.ts";

/** The longest value of each parameter, as the contract states it (spec/identity/device.tsp). */
const MAX_LENGTH: Readonly<Record<string, number>> = { client_id: 255, client_secret: 255, scope: 1024, resource: 2048 };

const readForm = (body: unknown, headers: RequestHeaders) => readOAuthForm(body, headers, MAX_LENGTH);

async function authorizationAnswer(body: unknown, headers: RequestHeaders, deps: IdentityDeps) {
  try {
    const form = readForm(body, headers);
    const app = await authenticateClient(deps.accounts, readClientCredentials(headers.authorization, form));
    return {
      status: 200 as const,
      headers: { ...NO_STORE },
      body: await deps.oauth.device.start(app, form.scope, form.resource || undefined),
    };
  } catch (err) {
    if (err instanceof OAuthError) throw oauthErrorResponse(err);
    throw err;
  }
}

const signedOut = () => page(401, signInFirstPage("connect a device", DEVICE_VERIFICATION_PATH));

async function sessionFrom(auth: IdentityPrincipal, headers: RequestHeaders, deps: IdentityDeps): Promise<Session | undefined> {
  return sessionOf(auth ?? (await deps.oauth.authenticateSession(headers)));
}

function codeForm(status: number, headers: RequestHeaders, deps: IdentityDeps, userCode?: string, error?: string): Reply {
  const csrf = csrfOf(headers, deps);
  return page(
    status,
    deviceCodePage({ csrfToken: csrf.token, ...(userCode ? { userCode } : {}), ...(error ? { error } : {}) }),
    [],
    csrf.cookies,
  );
}

/** A refusal of the domain as the page: 429 beyond the guess limits (X-ID-DEV-4), the form again with 400 otherwise. */
function refusal(err: unknown, headers: RequestHeaders, deps: IdentityDeps, typed: string): Reply {
  const problem = asProblem(err);
  if (!problem || problem.status >= 500) throw err;
  if (problem.status === 429) {
    const retryAfter = Number(problem.headers["Retry-After"] ?? 60);
    const reply = page(
      429,
      messagePage({
        title: "Too many codes",
        heading: "Too many wrong codes",
        message: `Wait ${Math.ceil(retryAfter / 60)} minutes, then try again.`,
      }),
    );
    reply.headers["Retry-After"] = String(retryAfter);
    return reply;
  }
  return codeForm(400, headers, deps, typed, problem.message);
}

const verification = hostedForm(async ({ form, headers, ip, auth, problem }, deps) => {
  const session = await sessionFrom(auth, headers, deps);
  if (!session) return signedOut();
  const typed = typeof form.user_code === "string" ? form.user_code.slice(0, 64) : "";
  if (problem) return codeForm(400, headers, deps, typed, "The form was not valid. Try again.");
  try {
    if (form.action === "lookup") {
      const pending = await deps.oauth.device.lookUp(typed, session, ip);
      const csrf = csrfOf(headers, deps);
      const name = pending.application.name;
      return page(
        200,
        deviceConsentPage({
          csrfToken: csrf.token,
          userCode: pending.userCode,
          applicationName: name,
          branding: pending.application.branding,
          scopes: pending.scopes.map((s) => describeScope(s, name, pending.row.resource ?? undefined)),
        }),
        [],
        csrf.cookies,
      );
    }
    const approved = form.action === "approve";
    const decided = await deps.oauth.device.decide(typed, session, ip, approved);
    return page(200, deviceDonePage({ approved, applicationName: decided.application.name, branding: decided.application.branding }));
  } catch (err) {
    return refusal(err, headers, deps, typed);
  }
});

/** The typed code as `XXXX-XXXX` when it can be a user code, else undefined. */
function wellFormed(typed: unknown): string | undefined {
  const code = typeof typed === "string" ? normaliseUserCode(typed.slice(0, 64)) : undefined;
  return code ? formatUserCode(code) : undefined;
}

/**
 * `GET /device`: the code form when signed in (filled in from `user_code`), else the sign-in. The
 * sign-in's return lands here with the user code in `state` (X-ID-DEV-9), and is sent on to the
 * form with the code filled in, so that the sign-in's `code` never stays in the address bar.
 */
async function devicePageReply(query: RawRequest["query"], headers: RequestHeaders, auth: IdentityPrincipal, deps: IdentityDeps) {
  const session = await sessionFrom(auth, headers, deps);
  const returning = query.code !== undefined || query.state !== undefined || query.iss !== undefined;
  if (session) {
    if (!returning && query.error === undefined) return codeForm(200, headers, deps, str(query.user_code));
    const kept = wellFormed(query.state);
    return redirect(302, kept ? `${DEVICE_VERIFICATION_PATH}?user_code=${kept}` : DEVICE_VERIFICATION_PATH);
  }
  if (query.error !== undefined) return signedOut();
  return redirect(302, accountSignInPath(deps.oauth.issuer, DEVICE_VERIFICATION_PATH, wellFormed(query.user_code)));
}

/**
 * A query that breaks the contract, as the account page answers one: undeclared parameters are
 * ignored; a declared one out of bounds (an over-long `user_code`) is the code form again with 400
 * when signed in, else the 400 page that leads to `/device`. Nothing of the query is kept.
 */
async function malformedQueryReply(problem: HttpProblem, headers: RequestHeaders, deps: IdentityDeps) {
  if (onlyUnknownParameters(problem)) return devicePageReply({}, headers, undefined, deps);
  const session = await sessionFrom(undefined, headers, deps);
  if (!session) return linkNotValidPage("Connect a device", { href: DEVICE_VERIFICATION_PATH, label: "Enter the code" });
  return codeForm(400, headers, deps, undefined, "That is not a code. Type the code your device shows.");
}

const str = (v: unknown) => (typeof v === "string" ? v.slice(0, 64) : undefined);

export const deviceHandlers: Pick<IdentityHandlers, "deviceAuthorization" | "devicePage" | "deviceVerify"> = {
  deviceAuthorization: ({ body, headers }, deps) => authorizationAnswer(body, headers, deps),
  async devicePage({ query, headers, auth }, deps) {
    return send(await devicePageReply(query as RawRequest["query"], headers, auth, deps));
  },
  deviceVerify: verification.handler,
};

export const deviceProblemMappers = (deps: IdentityDeps) => ({
  /** A body that breaks the contract is answered in RFC 6749 terms too, from the raw form. */
  deviceAuthorization: async (problem: HttpProblem, raw: RawRequest): Promise<HttpResponseError> => {
    if (problem.status === 413) return oauthErrorResponse(invalidRequest("The request body is too large."));
    try {
      const ok = await authorizationAnswer(raw.body, raw.headers, deps);
      return new HttpResponseError(ok.status, ok.body, { headers: ok.headers });
    } catch (err) {
      if (err instanceof HttpResponseError) return err;
      throw err;
    }
  },
  devicePage: async (problem: HttpProblem, raw: RawRequest) => asError(await malformedQueryReply(problem, raw.headers, deps)),
  deviceVerify: verification.problemMapper(deps),
});
