/**
 * The passkey operations (X-ID-PK-1..8): the account's passkeys page and its forms, the JSON option
 * endpoints the page script calls, passkey sign-in on the login page, and the script itself.
 */
import type { RequestHeaders } from "../../server/http/handler-types.ts";
import { DomainError } from "../../server/domain/errors.ts";
import { asProblem } from "../../server/http/problem.ts";
import type { IdentityDeps, IdentityHandlers, IdentityPrincipal } from "./identity-handlers.ts";
import type { PendingRequest } from "./domain/oauth/authorization.ts";
import type { Session } from "./domain/oauth/sessions.ts";
import {
  csrfOf,
  csrfValid,
  expired,
  hostedForm,
  page,
  redirect,
  refusedPage,
  requestView,
  send,
  sessionOf,
  signIn,
  type Reply,
} from "./shared/hosted-pages.ts";
import { withPasskeyScript } from "./shared/passkey-pages.ts";
import { requestOrigin } from "./shared/request-origin.ts";
import { loginPage } from "./views/authorize.ts";
import { notSignedInPage, passkeysPage } from "./views/passkeys.ts";
import { passkeysScript } from "./views/passkeys-script.ts";

const PAGE = "/account/passkeys";

/** Account key of the sign-in throttle for an assertion naming no registered passkey (X-ID-PK-5). */
const UNKNOWN_PASSKEY_ACCOUNT = "passkey:unknown";

/** The browser's session, from the handler's principal or, in a problem mapper, from the cookie. */
const sessionFrom = async (auth: IdentityPrincipal, headers: RequestHeaders, deps: IdentityDeps): Promise<Session | undefined> =>
  sessionOf(auth) ?? (await deps.oauth.authenticateSession(headers));

/** The passkeys page of `session`'s user, with a message when a form was refused. */
async function accountPage(status: number, session: Session, headers: RequestHeaders, deps: IdentityDeps, error?: string): Promise<Reply> {
  const user = await deps.accounts.findUserById(session.userId);
  if (!user) return page(401, notSignedInPage());
  const csrf = csrfOf(headers, deps);
  const html = passkeysPage({
    csrfToken: csrf.token,
    email: user.email,
    passkeys: await deps.passkeys.list(user.id),
    hasPassword: Boolean(user.password_hash),
    ...(error ? { error } : {}),
  });
  return withPasskeyScript(page(status, html, [], csrf.cookies), deps.oauth.issuer);
}

/** A form of the passkeys page posted without a session: 403, as a forged form. */
const notSignedIn = () => page(403, notSignedInPage());

/** The refusal a user can act on (a DomainError under 500) as its message; anything else is rethrown. */
function refusalMessage(err: unknown): string {
  const problem = asProblem(err);
  if (problem && problem.status < 500) return problem.message;
  throw err;
}

const registration = hostedForm(async ({ form, headers, ip, auth, problem }, deps) => {
  const session = await sessionFrom(auth, headers, deps);
  if (!session) return notSignedIn();
  if (problem) return accountPage(400, session, headers, deps, "The passkey's answer was not valid. Try again.");
  try {
    await deps.passkeys.register(
      session.userId,
      session.idHash,
      String(form.name ?? ""),
      String(form.credential),
      requestOrigin({ ip, headers }),
    );
  } catch (err) {
    return accountPage(400, session, headers, deps, refusalMessage(err));
  }
  return redirect(303, PAGE);
});

/** Renames passkey `id` (the path's; none in a problem mapper, which only shows the page again). */
const renaming = (id?: string) =>
  hostedForm(async ({ form, headers, ip, auth, problem }, deps) => {
    const session = await sessionFrom(auth, headers, deps);
    if (!session) return notSignedIn();
    if (problem || !id) return accountPage(400, session, headers, deps, "A passkey's name is 1 to 64 characters.");
    try {
      await deps.passkeys.rename(session.userId, id, String(form.name), requestOrigin({ ip, headers }));
    } catch (err) {
      return accountPage(asProblem(err)?.status === 404 ? 404 : 400, session, headers, deps, refusalMessage(err));
    }
    return redirect(303, PAGE);
  });

/** Removes passkey `id` (the path's; none in a problem mapper, which only shows the page again). */
const removal = (id?: string) =>
  hostedForm(async ({ form, headers, ip, auth, problem }, deps) => {
    const session = await sessionFrom(auth, headers, deps);
    if (!session) return notSignedIn();
    const user = await deps.accounts.findUserById(session.userId);
    if (!user) return notSignedIn();
    if (problem || !id) return accountPage(400, session, headers, deps, "Check the form and try again.");
    // X-ID-PK-6: the current password, throttled as a sign-in; without one, a recent sign-in.
    if (user.password_hash) {
      const password = typeof form.password === "string" ? form.password : "";
      const outcome = await deps.oauth.throttle.attempt(
        user.email,
        ip,
        () => deps.accounts.verifyPassword(user, password),
        (ok) => ok,
      );
      if (outcome.refused) return refusedPage(outcome.refused);
      if (!outcome.result) return accountPage(400, session, headers, deps, "The password is wrong.");
    } else if (!deps.passkeys.recentlySignedIn(session.authTime)) {
      return accountPage(400, session, headers, deps, "Sign in again (within the last 5 minutes) to remove a passkey.");
    }
    try {
      await deps.passkeys.remove(session.userId, id, requestOrigin({ ip, headers }));
    } catch (err) {
      return accountPage(asProblem(err)?.status === 404 ? 404 : 400, session, headers, deps, refusalMessage(err));
    }
    return redirect(303, PAGE);
  });

/** The login page again with a message (a refused passkey), as the password form's. */
function loginAgain(status: number, r: PendingRequest, headers: RequestHeaders, deps: IdentityDeps, error: string): Reply {
  const csrf = csrfOf(headers, deps);
  return withPasskeyScript(
    page(status, loginPage({ ...requestView(r, csrf.token, deps), error }), [r.redirectUri], csrf.cookies),
    deps.oauth.issuer,
  );
}

const passkeySignIn = hostedForm(async ({ form, headers, ip, problem }, deps) => {
  const request = await deps.oauth.authorization.findRequest(form.request_id);
  if (!request) return expired();
  if (problem) return loginAgain(400, request, headers, deps, "The passkey's answer was not valid. Try again.");
  const credential = String(form.credential);
  // X-ID-PK-5: counted against the passkey's account, as a password attempt is against its email.
  const ownerId = await deps.passkeys.credentialOwner(credential);
  const owner = ownerId ? await deps.accounts.findUserById(ownerId) : undefined;
  const outcome = await deps.oauth.throttle.attempt(
    owner?.email ?? UNKNOWN_PASSKEY_ACCOUNT,
    ip,
    async () => {
      try {
        return await deps.passkeys.authenticate(request.id, credential);
      } catch (err) {
        return refusalMessage(err);
      }
    },
    (result) => typeof result !== "string",
  );
  // X-ID-AUD-8: a refused passkey is a failed sign-in, recorded on its own as a refused password is.
  const failed = (reason: "invalid_credentials" | "throttled") =>
    deps.audit.record(undefined, {
      type: "user.sign_in_failed",
      actor: { type: "user" },
      userId: owner?.id,
      applicationId: request.application.id,
      origin: requestOrigin({ ip, headers }),
      details: { method: "passkey", reason },
    });
  if (outcome.refused) {
    await failed("throttled");
    return refusedPage(outcome.refused);
  }
  if (typeof outcome.result === "string") {
    await failed("invalid_credentials");
    return loginAgain(400, request, headers, deps, outcome.result);
  }
  const signedIn = await signIn(request, outcome.result.userId, headers, deps, ip, { method: "passkey" }, outcome.result.amr);
  return redirect(303, signedIn.location, [signedIn.cookie]);
});

/** X-ID-PK-8: the JSON option endpoints check the page's CSRF token. */
function requireCsrf(headers: RequestHeaders, token: string, deps: IdentityDeps) {
  if (!csrfValid(headers, token, deps)) throw new DomainError("forbidden", "forbidden", "The form has expired. Reload the page.");
}

export const passkeyHandlers: Pick<
  IdentityHandlers,
  | "passkeysPage"
  | "passkeyRegistrationOptions"
  | "registerPasskey"
  | "renamePasskey"
  | "removePasskey"
  | "passkeySignInOptions"
  | "passkeySignIn"
  | "passkeysScript"
> = {
  async passkeysPage({ headers, auth }, deps) {
    const session = sessionOf(auth);
    return send(session ? await accountPage(200, session, headers, deps) : page(401, notSignedInPage()));
  },

  async passkeyRegistrationOptions({ body, headers, auth }, deps) {
    requireCsrf(headers, body.csrf_token, deps);
    const session = sessionOf(auth);
    const user = session ? await deps.accounts.findUserById(session.userId) : undefined;
    if (!session || !user) throw new DomainError("forbidden", "forbidden", "Sign in first.");
    return { status: 200, body: { ...(await deps.passkeys.registrationOptions(user, session.idHash)) } };
  },

  registerPasskey: registration.handler,
  renamePasskey: (req, deps) => renaming(req.params.id).handler(req, deps),
  removePasskey: (req, deps) => removal(req.params.id).handler(req, deps),

  async passkeySignInOptions({ body, headers }, deps) {
    requireCsrf(headers, body.csrf_token, deps);
    const request = await deps.oauth.authorization.findRequest(body.request_id);
    if (!request)
      throw new DomainError("not_found", "not_found", "This sign-in request has expired. Go back to the application and start again.");
    return { status: 200, body: { ...(await deps.passkeys.authenticationOptions(request.id)) } };
  },

  passkeySignIn: passkeySignIn.handler,

  async passkeysScript() {
    return {
      status: 200,
      body: await passkeysScript(),
      contentType: "text/javascript; charset=utf-8",
      headers: { "Cache-Control": "public, max-age=300" },
    };
  },
};

export const passkeyProblemMappers = (deps: IdentityDeps) => ({
  registerPasskey: registration.problemMapper(deps),
  renamePasskey: renaming().problemMapper(deps),
  removePasskey: removal().problemMapper(deps),
  passkeySignIn: passkeySignIn.problemMapper(deps),
});
