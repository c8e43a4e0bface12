/**
 * Access tokens (X-ID-TOK-1): RFC 9068 JWTs signed ES256 with a key published in the JWKS (X-ID-KEY-1:
 * the ring's signing key of the moment; any published key of the ring verifies).
 * Used by the token endpoint (issue) and by everything that accepts one (verify): UserAuth
 * accepts any live token of this issuer; AdminAuth accepts only tokens of the first-party
 * dashboard client, for users who administer an organization (X-ID-ADM-1); introspection calls
 * the same verify, so it agrees with both (X-ID-TOK-5).
 */
import { randomUUID } from "node:crypto";
import { jwtVerify, errors as joseErrors, type JWTPayload, type JWTHeaderParameters } from "jose";
import type { Clock } from "../../../server/clock.ts";
import type { KeyRing } from "../../../server/keys/ring.ts";
import type { JwtSigner } from "../../../server/security/jwt-signer.ts";
import { forbidden, unauthenticated } from "../../../server/domain/errors.ts";
import type { GrantStore } from "../storage/grants.ts";
import type { OrganizationStore } from "../storage/organizations.ts";
import { accessTokenLive, grantOfJti, isClientToken } from "./token-liveness.ts";

export const ACCESS_TOKEN_TTL_SECONDS = 3600;
export const DASHBOARD_CLIENT_ID = "identity-dashboard";
export const REALM = "identity";

export interface UserPrincipal {
  kind: "user";
  userId: string;
  clientId: string;
  scopes: string[];
  jti: string;
  /** The token's `aud`: the client for this service's own tokens, else the resource it was made for (X-ID-RES-3). */
  audience: string;
  /** The DPoP key thumbprint the token is bound to (`cnf.jkt`, X-ID-DPOP-3); absent for a Bearer token. */
  jkt?: string;
}
export interface AdminPrincipal {
  kind: "admin";
  userId: string;
  organizationId: string;
  jti: string;
}

export interface AccessTokenOptions {
  issuer: string;
  keys: KeyRing;
  /** Signs with the ring's signing key of the moment (server/security/jwt-signer.ts). */
  signer: JwtSigner;
  clock: Clock;
  organizations: Pick<OrganizationStore, "administeredBy">;
  /** What X-ID-TOK-5 needs to know about a token: its application, user, grant and revocation. */
  grants: Pick<GrantStore, "accessTokenState">;
}

/** Refuses a verified token presented in a way its binding does not allow (throws). */
export type Presentation = (principal: UserPrincipal) => void;

export function createAccessTokens(o: AccessTokenOptions) {
  /** A JWT of `typ` (access tokens `at+jwt`, ID tokens `JWT`, logout tokens `logout+jwt`) signed with the key that signs now. */
  async function sign(typ: "at+jwt" | "JWT" | "logout+jwt", claims: JWTPayload): Promise<string> {
    const key = await o.keys.signingKey();
    return o.signer.sign(key, { alg: key.alg, kid: key.kid, typ }, claims);
  }

  /** Only a published key of the ring, by the token's `kid`, and only its algorithm. */
  const verificationKey = async (header: JWTHeaderParameters) => {
    const key = await o.keys.verificationKey(header.kid);
    if (!key) throw new joseErrors.JWKSNoMatchingKey();
    return key.publicKey;
  };

  async function issue(input: {
    userId: string;
    clientId: string;
    scopes: string[];
    jti?: string;
    authTime?: number;
    /** The API the token is for (RFC 8707: X-ID-RES-3, X-ID-CC-3); absent: the client itself. */
    audience?: string | undefined;
    /** Binds the token to a DPoP key (RFC 9449 §6.1, `cnf.jkt`). */
    jkt?: string;
  }) {
    const iat = Math.floor(o.clock.now().getTime() / 1000);
    const jti = input.jti ?? randomUUID();
    const token = await sign("at+jwt", {
      iss: o.issuer,
      sub: input.userId,
      aud: input.audience ?? input.clientId,
      iat,
      exp: iat + ACCESS_TOKEN_TTL_SECONDS,
      jti,
      client_id: input.clientId,
      scope: input.scopes.join(" "),
      ...(input.authTime ? { auth_time: input.authTime } : {}),
      ...(input.jkt ? { cnf: { jkt: input.jkt } } : {}),
    });
    return { token, jti, expiresIn: ACCESS_TOKEN_TTL_SECONDS, exp: iat + ACCESS_TOKEN_TTL_SECONDS };
  }

  /**
   * Verifies signature, issuer, type and expiry (never trusting `alg` from the token), then that
   * the token is live (X-ID-TOK-5): the one decision every endpoint that accepts a token uses.
   */
  async function verify(token: string): Promise<UserPrincipal> {
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, verificationKey, {
        issuer: o.issuer,
        algorithms: [o.keys.alg],
        typ: "at+jwt",
        currentDate: o.clock.now(),
        requiredClaims: ["sub", "exp", "iat", "jti", "client_id"],
      }));
    } catch (err) {
      if (!(err instanceof joseErrors.JOSEError)) throw err;
      const detail =
        err instanceof joseErrors.JWTExpired
          ? "The access token expired."
          : "The access token is malformed, not ours, or its signature is invalid.";
      throw unauthenticated(REALM, detail, "invalid_token");
    }
    const jti = String(payload.jti);
    const userId = String(payload.sub);
    const clientId = String(payload.client_id);
    const grantId = grantOfJti(jti);
    const state = await o.grants.accessTokenState({ jti, grantId, clientId, userId });
    if (!accessTokenLive({ userId, clientId, grantId, issuedAtSeconds: Number(payload.iat) }, state)) {
      throw unauthenticated(
        REALM,
        "The access token is no longer valid: it was revoked, or its user or application was deleted or disabled.",
        "invalid_token",
      );
    }
    const scope = typeof payload.scope === "string" ? payload.scope : "";
    const cnf = payload.cnf as { jkt?: unknown } | undefined;
    const jkt = cnf && typeof cnf.jkt === "string" ? cnf.jkt : undefined;
    // A token for a resource (X-ID-RES-3) names it as aud; this service's own tokens name the client.
    const audience = typeof payload.aud === "string" ? payload.aud : clientId;
    return { kind: "user", userId, clientId, scopes: scope.split(" ").filter(Boolean), jti, audience, ...(jkt ? { jkt } : {}) };
  }

  /**
   * X-ID-RES-5: a token made for another resource is not a token for this service's own endpoints
   * (UserInfo, the account and administration APIs), though introspection still describes it; nor
   * is a client's own token (X-ID-CC-4), which introspection describes too (X-ID-CC-8).
   */
  async function verifyOwn(token: string): Promise<UserPrincipal> {
    const user = await verify(token);
    if (user.audience !== user.clientId)
      throw unauthenticated(REALM, "The access token was issued for another resource, not for this service.", "invalid_token");
    // X-ID-CC-4: a client's own token speaks for no user, and every endpoint of this service is a user's.
    if (isClientToken({ userId: user.userId, clientId: user.clientId, grantId: grantOfJti(user.jti) }))
      throw unauthenticated(REALM, "The access token speaks for an application, not for a user.", "invalid_token");
    return user;
  }

  const missing = () => unauthenticated(REALM, "This operation needs an access token: Authorization: Bearer <ACCESS_TOKEN>.");

  /**
   * `presented`: checks how the token was presented against what it is bound to (X-ID-DPOP-5),
   * run once the token is verified and before anything else is decided on it.
   */
  async function authenticateUser(token: string | undefined, presented?: Presentation): Promise<UserPrincipal> {
    if (!token) throw missing();
    const user = await verifyOwn(token);
    presented?.(user);
    return user;
  }

  async function authenticateAdmin(token: string | undefined, presented?: Presentation): Promise<AdminPrincipal> {
    if (!token) throw missing();
    const user = await verifyOwn(token);
    presented?.(user);
    if (user.clientId !== DASHBOARD_CLIENT_ID) {
      throw unauthenticated(REALM, `Administration needs a token of the dashboard client (${DASHBOARD_CLIENT_ID}).`, "invalid_token");
    }
    const [organizationId] = await o.organizations.administeredBy(user.userId);
    if (!organizationId) throw forbidden("This user administers no organization.", "not_an_admin");
    return { kind: "admin", userId: user.userId, organizationId, jti: user.jti };
  }

  return { issue, sign, verify, authenticateUser, authenticateAdmin, options: o };
}

export type AccessTokens = ReturnType<typeof createAccessTokens>;
