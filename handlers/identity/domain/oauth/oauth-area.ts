/**
 * The OAuth area: hosted pages and sessions, authorization requests, codes, tokens, revocation,
 * introspection, UserInfo and social sign-in. Assembled once per service from the shared context
 * and the accounts area; the handlers call what it returns.
 */
import type { IdentityContext } from "../context.ts";
import type { AccountsArea } from "../accounts/accounts-area.ts";
import { createSignInThrottle, type SignInPolicy } from "../../../../server/security/sign-in-throttle.ts";
import type { SecretKeys } from "../../../../server/security/tokens.ts";
import { createAuthorization } from "./authorization.ts";
import { parseCookies, SESSION_COOKIE } from "./cookies.ts";
import { createSecrets } from "./secrets.ts";
import { createSessions, type Session } from "./sessions.ts";
import { createEndSession } from "./end-session.ts";
import { createSocial } from "./social.ts";
import { createSocialLinks } from "./social-link.ts";
import { createAuthorizationCodeGrant } from "./grants/authorization-code.ts";
import { createTokenIssuer } from "./grants/issue.ts";
import { createRefreshTokenGrant } from "./grants/refresh-token.ts";
import { createClientCredentialsGrant } from "./grants/client-credentials.ts";
import { createClientAssertionVerifier } from "./client-assertion.ts";
import { createClientAuthenticator } from "./client-authentication.ts";
import { createClientKeySets } from "./client-key-sets.ts";
import { createGrantRegistry } from "./grants/registry.ts";
import { createIntrospection } from "./introspection.ts";
import { createRevocation } from "./revocation.ts";
import { createTokenLookup } from "./token-lookup.ts";
import { createOwnAccount } from "./own-account.ts";
import { createGrantRevoker } from "./grant-revocation.ts";
import { createDeviceCodeGrant } from "./grants/device-code.ts";
import { createDeviceAuthorizations } from "./device/device-authorizations.ts";
import { createPushedRequests, type PushedRequestSettings } from "./pushed-requests.ts";
import { createDpopVerifier } from "../dpop/proof.ts";
import { createDpopNonces } from "../dpop/nonces.ts";

/** The deployment's choices the OAuth area follows (handlers/identity/config.ts). */
export interface OAuthSettings {
  /** How new codes and refresh tokens are keyed (IDENTITY_TOKEN_KEYS). */
  tokenKeys: SecretKeys;
  /** Password sign-in throttling (LOGIN_*). */
  signIn: SignInPolicy;
  /** Fetches a client's `jwksUri` under the outbound address rules (X-ID-CC-6). */
  fetchJwks: (url: string) => Promise<unknown>;
  /** Pushed authorization requests: their lifetime, and whether every application must push (IDENTITY_PAR_*, X-ID-PAR-*). */
  pushedRequests: PushedRequestSettings;
  /** DPoP server nonces' rotation period (IDENTITY_DPOP_NONCE_SECONDS); 0: nonces not required (X-ID-DPOP-7). */
  dpopNonceSeconds?: number;
}

/** The stores come from `ctx.storage` (storage/index.ts): sessions, authorization requests, consents, grants, the sign-in throttle's. */
export function createOAuthArea(ctx: IdentityContext, accounts: AccountsArea, settings: OAuthSettings) {
  const { storage } = ctx;
  const grantStore = storage.grants;
  const secrets = createSecrets(ctx.clientSecretKey);
  // Back-Channel Logout (X-ID-LOGOUT-8): every session end queues its logout tokens.
  const { logouts } = ctx;
  const sessions = createSessions(storage.sessions, ctx.clock, { transaction: storage.transaction, audit: ctx.audit, logouts });
  const { tokenKeys } = settings;
  const pushed = createPushedRequests({ store: storage.pushedRequests, clock: ctx.clock, settings: settings.pushedRequests });
  const authorization = createAuthorization({ storage, clock: ctx.clock, issuer: ctx.issuer, tokenKeys, pushed, logouts });
  const issue = createTokenIssuer({ clock: ctx.clock, issuer: ctx.issuer, accessTokens: ctx.accessTokens, tokenKeys });
  // The token endpoint dispatches on grant_type through this registry (one module per grant).
  // Every revocation of a grant goes through here, so each one is in the audit log (X-ID-AUD-1).
  const revokeGrant = createGrantRevoker({ grants: grantStore, clock: ctx.clock, transaction: storage.transaction, audit: ctx.audit });
  const grants = createGrantRegistry([
    createAuthorizationCodeGrant({ grants: grantStore, clock: ctx.clock, issue, revoker: revokeGrant }),
    createRefreshTokenGrant({ grants: grantStore, clock: ctx.clock, issue, secrets, revokeGrant }),
    createDeviceCodeGrant({
      store: storage.deviceAuthorizations,
      findUser: (id) => storage.users.findById(id),
      transaction: storage.transaction,
      clock: ctx.clock,
      issue,
    }),
    createClientCredentialsGrant({ accessTokens: ctx.accessTokens }),
  ]);
  const lookup = createTokenLookup({ grants: grantStore, clock: ctx.clock, accessTokens: ctx.accessTokens });
  const revoke = createRevocation({ grants: grantStore, clock: ctx.clock, keys: ctx.keys, lookup, revokeGrant, audit: ctx.audit });
  const introspect = createIntrospection({ users: storage.users, issuer: ctx.issuer, lookup });
  // Password sign-in (hosted login, social link form) under the shared policy (X-ID-AZ-3, X-ID-AZ-4); the retention purge removes old rows.
  const throttle = createSignInThrottle(storage.signInThrottle, ctx.clock, settings.signIn);
  const social = createSocial({ ctx, accounts, requests: storage.authorizationRequests, secrets });
  const socialLinks = createSocialLinks({ accounts, secrets, clock: ctx.clock });
  // Client authentication at the token, revocation and introspection endpoints (X-ID-CC-5..7):
  // an assertion's `aud` may name the issuer or the endpoint it is sent to.
  const authenticateClient = createClientAuthenticator({
    accounts,
    findClient: async (clientId) => {
      const found = await storage.applications.findClient(clientId, ctx.clock.now().toISOString());
      return found?.application.enabled ? found.application : undefined;
    },
    verifier: createClientAssertionVerifier({
      clock: ctx.clock,
      audiences: [ctx.issuer, ...["/oauth/token", "/oauth/revoke", "/oauth/introspect"].map((p) => `${ctx.issuer}${p}`)],
      assertions: storage.clientAssertions,
    }),
    keySets: createClientKeySets({ clock: ctx.clock, fetchJson: settings.fetchJwks }),
  });

  return {
    accounts,
    authorization,
    grants,
    /** The calling client of the token, revocation and introspection endpoints (X-ID-CC-5), or ClientAuthError. */
    authenticateClient,
    revoke,
    introspect,
    sessions,
    throttle,
    secrets,
    social,
    socialLinks,
    /** The signed-in user's own account: the account page's grants, sessions, password and deletion (X-ID-ACCT-1..6). */
    account: createOwnAccount({ storage, accounts, throttle, events: ctx.events, clock: ctx.clock, audit: ctx.audit, logouts }),
    /** The issuer of every token (discovery, X-ID-DISC-1) and the origin of the hosted pages. */
    issuer: ctx.issuer,
    /** The ring of signing keys: the JWKS publishes its keys (X-ID-KEY-1), discovery names its algorithm. */
    keys: ctx.keys,
    /** Token requests counted by grant type and outcome (X-API-11). */
    grantMetrics: ctx.metrics.tokenGrants,
    /** The device authorization grant's endpoint and verification page (X-ID-DEV-1..4). */
    device: createDeviceAuthorizations({
      store: storage.deviceAuthorizations,
      applications: storage.applications,
      clock: ctx.clock,
      issuer: ctx.issuer,
      transaction: storage.transaction,
      audit: ctx.audit,
    }),
    /** Cookies are only ever Secure behind https, and always there. */
    secureCookies: ctx.issuer.startsWith("https://"),

    /** RP-Initiated Logout's checks of a logout request (X-ID-LOGOUT-2, X-ID-LOGOUT-3). */
    endSession: createEndSession({ issuer: ctx.issuer, keys: ctx.keys, applications: storage.applications }),
    /** Whether every application must push its authorization requests (discovery, X-ID-PAR-5). */
    pushedRequestsRequired: pushed.requiredForAll,
    /** DPoP proofs of the token endpoint and of the operations that accept an access token (X-ID-DPOP-1, X-ID-DPOP-2). */
    dpop: createDpopVerifier({
      clock: ctx.clock,
      proofs: storage.dpopProofs,
      nonces: settings.dpopNonceSeconds
        ? createDpopNonces({ clock: ctx.clock, secret: ctx.clientSecretKey, rotateSeconds: settings.dpopNonceSeconds })
        : undefined,
    }),

    /** Security handler of `SessionCookie`: the signed-in session, or undefined (never throws). */
    async authenticateSession(headers: Record<string, string | string[] | undefined>): Promise<Session | undefined> {
      return sessions.find(parseCookies(headers.cookie)[SESSION_COOKIE]);
    },
  };
}

export type OAuthArea = ReturnType<typeof createOAuthArea>;
