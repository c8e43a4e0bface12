/**
 * The OAuth area: hosted pages and sessions, authorization requests, codes, tokens, revocation,
 * introspection, UserInfo and social sign-in. Assembled once per service from the shared context
 * and the accounts area; the handlers call what it returns.
 */
import type { IdentityContext } from "../context.ts";
import type { AccountsArea } from "../accounts/accounts-area.ts";
import { createSignInThrottle, signInPolicy, type SignInThrottleStore } from "../../../../server/security/sign-in-throttle.ts";
import type { OAuthQueries } from "../../storage/oauth-queries.ts";
import type { GrantQueries } from "../../storage/grant-queries.ts";
import { createAuthorization } from "./authorization.ts";
import { parseCookies, SESSION_COOKIE } from "./cookies.ts";
import { createSecrets } from "./secrets.ts";
import { createSessions, type Session } from "./sessions.ts";
import { createSocial } from "./social.ts";
import { createSocialLinks } from "./social-link.ts";
import { createAuthorizationCodeGrant } from "./grants/authorization-code.ts";
import { createTokenIssuer } from "./grants/issue.ts";
import { createRefreshTokenGrant } from "./grants/refresh-token.ts";
import { createGrantRegistry } from "./grants/registry.ts";
import { createIntrospection } from "./introspection.ts";
import { createRevocation } from "./revocation.ts";
import { createTokenLookup } from "./token-lookup.ts";

/**
 * `storage`, built by service.ts: the OAuth queries, the token endpoint's hot-path queries (grant-queries.ts)
 * and where the password sign-in throttle counts attempts.
 */
export function createOAuthArea(
  ctx: IdentityContext,
  accounts: AccountsArea,
  storage: { q: OAuthQueries; hot: GrantQueries; throttleStore: SignInThrottleStore },
) {
  const { q, hot, throttleStore } = storage;
  const secrets = createSecrets(ctx.clientSecretKey);
  const sessions = createSessions(q, ctx.clock);
  const tokenKeys = ctx.config.IDENTITY_TOKEN_KEYS;
  const authorization = createAuthorization({ core: ctx.core, q, clock: ctx.clock, issuer: ctx.issuer, tokenKeys });
  const issue = createTokenIssuer({ clock: ctx.clock, issuer: ctx.issuer, accessTokens: ctx.accessTokens, tokenKeys });
  // The token endpoint dispatches on grant_type through this registry (one module per grant).
  const grants = createGrantRegistry([
    createAuthorizationCodeGrant({ q, hot, clock: ctx.clock, issue }),
    createRefreshTokenGrant({ q, hot, clock: ctx.clock, issue, secrets }),
  ]);
  const lookup = createTokenLookup({ q, clock: ctx.clock, accessTokens: ctx.accessTokens });
  const revoke = createRevocation({ q, clock: ctx.clock, keys: ctx.keys, lookup });
  const introspect = createIntrospection({ core: ctx.core, issuer: ctx.issuer, lookup });
  // Password sign-in (hosted login, social link form) under the shared policy (X-ID-AZ-3, X-ID-AZ-4); the retention purge removes old rows.
  const throttle = createSignInThrottle(throttleStore, ctx.clock, signInPolicy(ctx.config));
  const social = createSocial({ ctx, accounts, q, secrets });
  const socialLinks = createSocialLinks({ accounts, secrets, clock: ctx.clock });

  return {
    accounts,
    authorization,
    grants,
    revoke,
    introspect,
    sessions,
    throttle,
    secrets,
    social,
    socialLinks,
    /** The issuer of every token (discovery, X-ID-DISC-1) and the origin of the hosted pages. */
    issuer: ctx.issuer,
    /** The ring of signing keys: the JWKS publishes its keys (X-ID-KEY-1), discovery names its algorithm. */
    keys: ctx.keys,
    /** Token requests counted by grant type and outcome (X-API-11). */
    grantMetrics: ctx.metrics.tokenGrants,
    /** Cookies are only ever Secure behind https, and always there. */
    secureCookies: ctx.issuer.startsWith("https://"),

    /** Security handler of `SessionCookie`: the signed-in session, or undefined (never throws). */
    async authenticateSession(headers: Record<string, string | string[] | undefined>): Promise<Session | undefined> {
      return sessions.find(parseCookies(headers.cookie)[SESSION_COOKIE]);
    },
  };
}

export type OAuthArea = ReturnType<typeof createOAuthArea>;
