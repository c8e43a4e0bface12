/** Social sign-in redirects (ID-SOC-1): leave for the upstream provider, come back from it, and link to an existing account by its password (X-ID-SOC-1). */
import type { RequestHeaders } from "../../server/http/handler-types.ts";
import type { HttpProblem } from "../../server/http/problem.ts";
import type { RawRequest } from "../../server/http/app.ts";
import { asError, csrfOf, expired, hostedForm, page, redirect, refusedPage, send, signIn, type Reply } from "./shared/hosted-pages.ts";
import type { IdentityHandlers, IdentityDeps } from "./identity-handlers.ts";
import type { PendingRequest } from "./domain/oauth/authorization.ts";
import { clearCookie, parseCookies, serializeCookie, SOCIAL_COOKIE, SOCIAL_LINK_COOKIE } from "./domain/oauth/cookies.ts";
import { messagePage } from "./views/messages.ts";
import { linkPage } from "./views/social.ts";
import { SOCIAL_STATE_TTL_SECONDS, SocialError } from "./domain/oauth/social.ts";
import { SOCIAL_LINK_TTL_SECONDS, type PendingLink } from "./domain/oauth/social-link.ts";
import { requestOrigin } from "./shared/request-origin.ts";

const COOKIE_PATH = "/oauth/social";

const failure = (message: string, back?: string) =>
  page(
    400,
    messagePage({
      title: "Sign-in failed",
      heading: "The sign-in did not complete",
      message,
      ...(back ? { link: { href: back, label: "Back to the sign-in page" } } : {}),
    }),
  );

const clearLink = (deps: IdentityDeps) => clearCookie(SOCIAL_LINK_COOKIE, { secure: deps.oauth.secureCookies, path: COOKIE_PATH });

/** The password form of a pending link (X-ID-SOC-1), with a message after a failed attempt. */
function linkForm(
  status: 200 | 400,
  r: PendingRequest,
  link: Pick<PendingLink, "provider" | "email">,
  headers: RequestHeaders,
  deps: IdentityDeps,
  cookies: string[],
  error?: string,
): Reply {
  const csrf = csrfOf(headers, deps);
  const html = linkPage({
    csrfToken: csrf.token,
    applicationName: r.application.name,
    branding: r.application.branding,
    providerName: deps.accounts.findProvider(link.provider)?.name ?? link.provider,
    email: link.email,
    signInHref: deps.oauth.authorization.restartUrl(r),
    ...(error ? { error } : {}),
  });
  return page(status, html, [], [...cookies, ...csrf.cookies]);
}

/** `POST /oauth/social/link`; the password form again when the body broke the contract (no password). */
const linkSubmission = hostedForm(async ({ form, headers, ip, problem }, deps) => {
  const link = deps.oauth.socialLinks.open(parseCookies(headers.cookie)[SOCIAL_LINK_COOKIE]);
  // The request is consumed by a completed link: a second post of the same form ends here.
  const request = link ? await deps.oauth.authorization.findRequest(link.requestId) : undefined;
  if (!link || !request || !deps.oauth.social.providerFor(link.provider, request)) return expired();
  if (problem || typeof form.password !== "string")
    return linkForm(400, request, link, headers, deps, [], "Enter the password of your account.");

  // The password sign-in's limits (X-ID-AZ-3, X-ID-AZ-4): a link form is no way around them.
  const password = form.password;
  const attempt = await deps.oauth.throttle.attempt(
    link.email,
    ip,
    () => deps.oauth.socialLinks.prove(link, password),
    (o) => o.kind === "linked",
  );
  if (attempt.refused) return refusedPage(attempt.refused);
  const outcome = attempt.result;
  if (outcome.kind === "gone") return expired();
  if (outcome.kind === "wrong-password") return linkForm(400, request, link, headers, deps, [], "The password is wrong.");
  // Signed in as after a password sign-in on the page that listed the scopes (X-ID-AZ-2).
  const signedIn = await signIn(request, outcome.user.id, headers, deps, ip, {
    method: "social",
    origin: requestOrigin({ ip, headers }),
    details: { provider: link.provider },
  });
  return redirect(303, signedIn.location, [signedIn.cookie, clearLink(deps)]);
});

export const socialHandlers: Pick<IdentityHandlers, "startSocialSignIn" | "socialSignInCallback" | "linkSocialAccount"> = {
  async startSocialSignIn({ params, query }, deps) {
    const request = await deps.oauth.authorization.findRequest(query.request_id);
    if (!request) return send(failure("The sign-in request expired. Go back to the application and start again."));
    try {
      const { location, state } = await deps.oauth.social.start(params.provider, request);
      const cookie = serializeCookie(SOCIAL_COOKIE, state, {
        secure: deps.oauth.secureCookies,
        path: COOKIE_PATH,
        maxAgeSeconds: SOCIAL_STATE_TTL_SECONDS,
      });
      return send(redirect(302, location, [cookie]));
    } catch (err) {
      if (err instanceof SocialError) return send(failure(err.message, deps.oauth.authorization.restartUrl(request)));
      throw err;
    }
  },

  async socialSignInCallback({ params, query, headers, ip }, deps) {
    const cookies = parseCookies(headers.cookie);
    const clearState = clearCookie(SOCIAL_COOKIE, { secure: deps.oauth.secureCookies, path: COOKIE_PATH });
    try {
      const outcome = await deps.oauth.social.callback(
        params.provider,
        query as Record<string, string | undefined>,
        cookies[SOCIAL_COOKIE],
        (id) => deps.oauth.authorization.findRequest(id),
      );
      if (outcome.kind === "link") {
        // X-ID-SOC-1: an existing account the upstream's word alone may not open. Ask for its
        // password; what to link waits in a sealed cookie, and nobody is signed in yet.
        const sealed = deps.oauth.socialLinks.seal({ requestId: outcome.request.id, ...outcome.identity, user: outcome.user });
        const linkCookie = serializeCookie(SOCIAL_LINK_COOKIE, sealed, {
          secure: deps.oauth.secureCookies,
          path: COOKIE_PATH,
          maxAgeSeconds: SOCIAL_LINK_TTL_SECONDS,
        });
        return send(
          linkForm(200, outcome.request, { provider: outcome.identity.provider, email: outcome.user.email }, headers, deps, [
            clearState,
            linkCookie,
          ]),
        );
      }
      // Signed in as after a password sign-in on the page that listed the scopes (X-ID-AZ-2).
      const signedIn = await signIn(outcome.request, outcome.user.id, headers, deps, ip, {
        method: "social",
        origin: requestOrigin({ ip, headers }),
        details: { provider: params.provider },
      });
      return send(redirect(302, signedIn.location, [signedIn.cookie, clearState]));
    } catch (err) {
      if (err instanceof SocialError) {
        const reply = failure(err.message);
        reply.headers["Set-Cookie"] = [clearState];
        return send(reply);
      }
      throw err;
    }
  },

  linkSocialAccount: linkSubmission.handler,
};

/** A provider id, query or form that breaks the contract: pages, never a problem document. */
export const socialProblemMappers = (deps: IdentityDeps) => ({
  startSocialSignIn: async (_p: HttpProblem, _raw: RawRequest) =>
    asError(failure("This sign-in link is not valid. Go back to the application and start again.")),
  socialSignInCallback: async (_p: HttpProblem, _raw: RawRequest) =>
    asError(failure("This sign-in link is not valid. Go back to the application and start again.")),
  linkSocialAccount: linkSubmission.problemMapper(deps),
});
