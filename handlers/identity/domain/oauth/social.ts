/**
 * Social sign-in (ID-SOC-1): this server as an OAuth client of an upstream identity provider,
 * through oauth4webapi (panva's audited client; no hand-written protocol code here).
 *
 * - OpenID Connect providers by issuer URL: discovery (cached), code flow with `state`, PKCE S256
 *   and `nonce`, the ID token validated (issuer, audience, nonce, expiry), claims completed from
 *   UserInfo (providers such as oidc-provider put scope claims there only).
 * - Plain OAuth 2.0 providers (GitHub) by their endpoints: the same flow without an ID token; the
 *   profile comes from the user API (`sub` or `id`, `email`, `email_verified`, names).
 *
 * The `state` is single use, bound to the browser by the `identity_social` cookie and stored
 * hashed, with the PKCE verifier and nonce sealed; it expires with the pending request.
 */
import * as oauth from "oauth4webapi";
import type { SocialProviderConfig } from "../accounts/providers.ts";
import { isEmailAddress } from "../../../../server/email-address.ts";
import { randomSecret, safeEqual, sha256Hex } from "../../../../server/security/tokens.ts";
import type { UserRow } from "../../storage/schema.ts";
import type { AuthorizationRequestStore } from "../../storage/authorization-requests.ts";
import type { AccountsArea } from "../accounts/accounts-area.ts";
import type { IdentityContext } from "../context.ts";
import type { PendingRequest } from "./authorization.ts";
import type { Secrets } from "./secrets.ts";

export const SOCIAL_STATE_TTL_SECONDS = 600;
const UPSTREAM_TIMEOUT_MS = 10_000;

/** Why a social sign-in did not complete, in words for the page. */
export class SocialError extends Error {
  override name = "SocialError";
}

/** How a callback ends: signed in, or an existing account to prove before the identity is linked to it (X-ID-SOC-1). */
export type CallbackOutcome =
  | { kind: "signed-in"; user: UserRow; request: PendingRequest }
  | { kind: "link"; user: UserRow; request: PendingRequest; identity: { provider: string; subject: string; emailVerified: boolean } };

/** Plain http only towards loopback (development, tests); anything else must be https. */
const insecureAllowed = (url: string) => /^http:\/\/(127\.0\.0\.1|\[::1\]|localhost)(:\d+)?(\/|$)/.test(url);

export function createSocial(deps: {
  ctx: IdentityContext;
  accounts: AccountsArea;
  requests: AuthorizationRequestStore;
  secrets: Secrets;
}) {
  const { ctx, accounts, requests, secrets } = deps;
  const metadata = new Map<string, Promise<oauth.AuthorizationServer>>();

  const redirectUri = (providerId: string) => `${ctx.issuer}/oauth/social/${providerId}/callback`;
  const requestOptions = (url: string) => ({
    signal: () => AbortSignal.timeout(UPSTREAM_TIMEOUT_MS),
    ...(insecureAllowed(url) ? { [oauth.allowInsecureRequests]: true } : {}),
  });

  /** The upstream's metadata: discovered once for OpenID Connect (retried after a failure), built from configuration for OAuth 2.0. */
  function serverOf(p: SocialProviderConfig): Promise<oauth.AuthorizationServer> {
    let cached = metadata.get(p.id);
    if (!cached) {
      cached =
        p.type === "oidc"
          ? (async () => {
              const issuer = new URL(p.issuer);
              return oauth.processDiscoveryResponse(
                issuer,
                await oauth.discoveryRequest(issuer, { algorithm: "oidc", ...requestOptions(p.issuer) }),
              );
            })()
          : Promise.resolve({
              issuer: new URL(p.authorizationEndpoint).origin,
              authorization_endpoint: p.authorizationEndpoint,
              token_endpoint: p.tokenEndpoint,
              userinfo_endpoint: p.userinfoEndpoint,
            });
      cached.catch(() => metadata.delete(p.id));
      metadata.set(p.id, cached);
    }
    return cached;
  }

  /** Providers the request's application may use: enabled for it and configured here. */
  function providerFor(providerId: string, request: PendingRequest): SocialProviderConfig | undefined {
    if (!request.application.enabledProviders.includes(providerId)) return undefined;
    return accounts.findProvider(providerId);
  }

  /** Where to send the browser, and the state to bind to it by cookie. */
  async function start(providerId: string, request: PendingRequest): Promise<{ location: string; state: string }> {
    const p = providerFor(providerId, request);
    if (!p) throw new SocialError("This sign-in method is not available for this application.");
    let as: oauth.AuthorizationServer;
    try {
      as = await serverOf(p);
    } catch (err) {
      ctx.logger.warn({ err, provider: p.id }, "social provider discovery failed");
      throw new SocialError(`${p.name} cannot be reached right now. Choose another way to sign in.`);
    }
    const state = randomSecret(32);
    const codeVerifier = oauth.generateRandomCodeVerifier();
    const nonce = p.type === "oidc" ? oauth.generateRandomNonce() : undefined;
    const now = ctx.clock.now();
    await requests.insertSocialState({
      state_hash: sha256Hex(state),
      request_id: request.id,
      provider: p.id,
      secrets: secrets.seal(JSON.stringify({ codeVerifier, nonce })),
      created_at: now.toISOString(),
      expires_at: new Date(now.getTime() + SOCIAL_STATE_TTL_SECONDS * 1000).toISOString(),
    });
    const url = new URL(as.authorization_endpoint!);
    url.searchParams.set("client_id", p.clientId);
    url.searchParams.set("redirect_uri", redirectUri(p.id));
    url.searchParams.set("response_type", "code");
    url.searchParams.set("scope", p.scope);
    url.searchParams.set("state", state);
    url.searchParams.set("code_challenge", await oauth.calculatePKCECodeChallenge(codeVerifier));
    url.searchParams.set("code_challenge_method", "S256");
    if (nonce) url.searchParams.set("nonce", nonce);
    return { location: url.toString(), state };
  }

  /**
   * The upstream came back. Checks the state against the browser's cookie, exchanges the code,
   * reads the profile and finds, links or creates the user. Returns the user and the pending
   * request to continue, or, when the email is an existing account's that the upstream's word
   * alone may not open (X-ID-SOC-1), that account with the identity to link once it is proven.
   */
  async function callback(
    providerId: string,
    query: Record<string, string | undefined>,
    cookieState: string | undefined,
    findRequest: (id: string) => Promise<PendingRequest | undefined>,
  ): Promise<CallbackOutcome> {
    const state = query.state;
    if (!state || !cookieState || !safeEqual(state, cookieState))
      throw new SocialError("The sign-in did not start in this browser, or it was already completed.");
    const row = await requests.takeSocialState(sha256Hex(state), ctx.clock.now().toISOString());
    if (!row || row.provider !== providerId) throw new SocialError("The sign-in expired or was already completed. Start again.");
    const request = await findRequest(row.request_id);
    if (!request) throw new SocialError("The sign-in request expired. Go back to the application and start again.");
    const p = providerFor(providerId, request);
    if (!p) throw new SocialError("This sign-in method is not available for this application.");
    const opened = secrets.open(row.secrets);
    if (!opened) throw new SocialError("The sign-in could not be verified. Start again.");
    const { codeVerifier, nonce } = JSON.parse(opened) as { codeVerifier: string; nonce?: string };

    const profile = await fetchProfile(p, query, state, codeVerifier, nonce).catch((err: unknown) => {
      if (err instanceof SocialError) throw err;
      ctx.logger.warn(
        { err: { name: (err as Error)?.name, message: (err as Error)?.message }, provider: p.id },
        "social sign-in failed upstream",
      );
      throw new SocialError(`${p.name} did not confirm the sign-in. Go back and try again, or choose another way to sign in.`);
    });
    const found = await accounts.findOrCreateSocialUser({
      provider: p.id,
      subject: profile.subject,
      email: profile.email,
      emailVerified: profile.emailVerified,
      firstName: profile.firstName,
      lastName: profile.lastName,
      clientId: request.application.clientId,
    });
    if (found.outcome === "signed-in") return { kind: "signed-in", user: found.user, request };
    // Only the account's password can prove it now; an account without one cannot be linked here.
    if (!found.user.password_hash) {
      throw new SocialError(`An account with the email address ${found.user.email} already exists. Sign in the way you signed in before.`);
    }
    return {
      kind: "link",
      user: found.user,
      request,
      identity: { provider: p.id, subject: profile.subject, emailVerified: profile.emailVerified },
    };
  }

  async function fetchProfile(
    p: SocialProviderConfig,
    query: Record<string, string | undefined>,
    state: string,
    codeVerifier: string,
    nonce: string | undefined,
  ) {
    if (query.error)
      throw new SocialError(
        `${p.name} did not sign you in (${query.error === "access_denied" ? "cancelled" : query.error}). Choose another way to sign in.`,
      );
    const as = await serverOf(p);
    const client: oauth.Client = { client_id: p.clientId };
    const clientAuth = oauth.ClientSecretBasic(p.clientSecret);
    const params = new URLSearchParams(Object.entries(query).filter((e): e is [string, string] => typeof e[1] === "string"));
    // Checks state, and iss against the configured issuer when the upstream sends it (RFC 9207: mix-up defence).
    const callbackParams = oauth.validateAuthResponse(as, client, params, state);
    const tokenUrl = as.token_endpoint!;
    const response = await oauth.authorizationCodeGrantRequest(
      as,
      client,
      clientAuth,
      callbackParams,
      redirectUri(p.id),
      codeVerifier,
      requestOptions(tokenUrl),
    );
    if (p.type === "oidc") {
      const result = await oauth.processAuthorizationCodeResponse(as, client, response, { expectedNonce: nonce!, requireIdToken: true });
      const idClaims = oauth.getValidatedIdTokenClaims(result)!;
      let claims: Record<string, unknown> = { ...idClaims };
      if (as.userinfo_endpoint && (claims.email === undefined || claims.given_name === undefined)) {
        const info = await oauth.processUserInfoResponse(
          as,
          client,
          idClaims.sub,
          await oauth.userInfoRequest(as, client, result.access_token, requestOptions(as.userinfo_endpoint)),
        );
        claims = { ...info, ...idClaims }; // the signed ID token wins; UserInfo fills the gaps
      }
      return toProfile(p, String(idClaims.sub), claims);
    }
    const result = await oauth.processAuthorizationCodeResponse(as, client, response);
    const userinfo = p.userinfoEndpoint;
    const res = await oauth.protectedResourceRequest(
      result.access_token,
      "GET",
      new URL(userinfo),
      new Headers({ accept: "application/json" }),
      null,
      requestOptions(userinfo),
    );
    if (!res.ok) throw new Error(`user API answered ${res.status}`);
    const body = (await res.json()) as Record<string, unknown>;
    const subject = body.sub ?? body.id;
    if (subject === undefined || subject === null) throw new Error("user API gave no subject");
    return toProfile(p, String(subject), body);
  }

  function toProfile(p: SocialProviderConfig, subject: string, c: Record<string, unknown>) {
    // The upstream's address becomes an account's email and every `email` claim: registration's
    // rule holds for it too (X-ID-SOC-2), the one function the contract's `email` format runs (X-API-18).
    const email = typeof c.email === "string" ? c.email : undefined;
    if (!email || !isEmailAddress(email)) {
      // The provider only, never the value: it is what the upstream's user typed.
      if (email) ctx.logger.info({ provider: p.id }, "social sign-in: the upstream's email is not an address sign-up takes");
      throw new SocialError(`${p.name} did not share an email address that can be used for your account. Choose another way to sign in.`);
    }
    const name = typeof c.name === "string" ? c.name.trim() : "";
    const first = typeof c.given_name === "string" ? c.given_name : (name.split(" ")[0] ?? "");
    const last = typeof c.family_name === "string" ? c.family_name : name.split(" ").slice(1).join(" ");
    const clean = (s: string) => s.replace(/\u0000/g, "").slice(0, 100);
    return {
      subject: subject.slice(0, 255),
      email,
      emailVerified: c.email_verified === true,
      firstName: clean(first),
      lastName: clean(last),
    };
  }

  return { start, callback, providerFor };
}

export type Social = ReturnType<typeof createSocial>;
