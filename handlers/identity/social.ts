/** Social sign-in redirects (ID-SOC-1): leave for the upstream provider, and come back from it. */
import type { HttpProblem } from "../../server/http/problem.ts";
import type { RawRequest } from "../../server/http/app.ts";
import { asError, page, pageHeaders, redirect, send, sessionCookie } from "./authorize.ts";
import type { IdentityHandlers, IdentityDeps } from "./deps.ts";
import { clearCookie, parseCookies, serializeCookie, SESSION_COOKIE, SOCIAL_COOKIE } from "./domain/oauth/cookies.ts";
import { messagePage } from "./domain/oauth/pages/messages.ts";
import { SOCIAL_STATE_TTL_SECONDS, SocialError } from "./domain/oauth/social.ts";

const COOKIE_PATH = "/oauth/social";

const failure = (message: string, back?: string) =>
  page(
    400,
    messagePage({ title: "Sign-in failed", heading: "The sign-in did not complete", message, ...(back ? { link: { href: back, label: "Back to the sign-in page" } } : {}) }),
    pageHeaders(),
  );

export const socialHandlers: Pick<IdentityHandlers, "startSocialSignIn" | "socialSignInCallback"> = {
  async startSocialSignIn({ params, query }, deps) {
    const request = await deps.oauth.authorization.findRequest(query.request_id);
    if (!request) return send(failure("The sign-in request expired. Go back to the application and start again."));
    try {
      const { location, state } = await deps.oauth.social.start(params.provider, request);
      const cookie = serializeCookie(SOCIAL_COOKIE, state, { secure: deps.oauth.secureCookies, path: COOKIE_PATH, maxAgeSeconds: SOCIAL_STATE_TTL_SECONDS });
      return send(redirect(302, location, [cookie]));
    } catch (err) {
      if (err instanceof SocialError) return send(failure(err.message, deps.oauth.authorization.restartUrl(request)));
      throw err;
    }
  },

  async socialSignInCallback({ params, query, headers }, deps) {
    const cookies = parseCookies(headers.cookie);
    const clearState = clearCookie(SOCIAL_COOKIE, { secure: deps.oauth.secureCookies, path: COOKIE_PATH });
    try {
      const { user, request } = await deps.oauth.social.callback(params.provider, query as Record<string, string | undefined>, cookies[SOCIAL_COOKIE], (id) =>
        deps.oauth.authorization.findRequest(id),
      );
      // Signed in as after a password sign-in on the page that listed the scopes (X-ID-AZ-2).
      const started = await deps.oauth.sessions.start(user.id, cookies[SESSION_COOKIE]);
      const location = await deps.oauth.authorization.complete(request, user.id, started.session.authTime, (appId, uid) => deps.accounts.addApplicationUser(appId, uid));
      return send(redirect(302, location, [sessionCookie(started.cookieValue, deps), clearState]));
    } catch (err) {
      if (err instanceof SocialError) {
        const reply = failure(err.message);
        reply.headers["Set-Cookie"] = [clearState];
        return send(reply);
      }
      throw err;
    }
  },
};

/** A provider id or query that breaks the contract: the same 400 page, never a problem document. */
export const socialProblemMappers = (_deps: IdentityDeps) => ({
  startSocialSignIn: async (_p: HttpProblem, _raw: RawRequest) => asError(failure("This sign-in link is not valid. Go back to the application and start again.")),
  socialSignInCallback: async (_p: HttpProblem, _raw: RawRequest) => asError(failure("This sign-in link is not valid. Go back to the application and start again.")),
});
