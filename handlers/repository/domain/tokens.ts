/**
 * The two token systems of the repository-and-build service.
 *
 * - User tokens: access (aud `repository-api`, 1 hour, the seed's limit) and refresh (aud
 *   `repository-refresh`, rotating, single-use, family revoked on reuse: RFC 9700 §4.14.2), both
 *   signed with the user key. A revoked family refuses all its refresh tokens, those stored after
 *   the revocation included (X-RB-12); access tokens are checked by signature alone.
 * - Agent tokens: aud `build-agent`, signed with a separate agent key, revocable by deleting the agent.
 *
 * Verification pins the algorithm (EdDSA), issuer and audience, so `alg: none`, a token of the other
 * system, or one signed with another key are all refused. Each system's keys are a ring an operator
 * rotates (X-RB-11, server/keys/): tokens are signed with its key of the moment and verified with
 * any key it still publishes.
 */
import { randomUUID } from "node:crypto";
import { foreignTokenDetail, issuerOf } from "./foreign-tokens.ts";
import { SignJWT, jwtVerify, errors as joseErrors, type JWTHeaderParameters } from "jose";
import type { Clock } from "../../../server/clock.ts";
import type { KeyRing } from "../../../server/keys/ring.ts";
import { badCredentials, unauthenticated } from "../../../server/domain/errors.ts";
import { safeEqual, sha256Hex } from "../../../server/security/tokens.ts";
import type { AgentStore } from "../storage/agents.ts";
import type { RefreshTokenStore } from "../storage/refresh-tokens.ts";
import type { RefreshTokenRow } from "../storage/schema.ts";

export const ACCESS_TOKEN_TTL_SECONDS = 3600; // seed §8: "Access token lifetime: 1 hour"
export const AUDIENCE = { access: "repository-api", refresh: "repository-refresh", agent: "build-agent" } as const;
export const REALM = "repository";

export interface UserPrincipal {
  kind: "user";
  userId: string;
}
export interface AgentPrincipal {
  kind: "agent";
  agentId: string;
  ownerId: string;
}
export type Principal = UserPrincipal | AgentPrincipal;

export interface TokenPair {
  accessToken: string;
  refreshToken: string;
  expiresAt: string;
}

/** How long the long-lived tokens live, in seconds (REPOSITORY_REFRESH_TTL_SECONDS, REPOSITORY_AGENT_TTL_SECONDS). */
export interface TokenLifetimes {
  refreshTtlSeconds: number;
  agentTtlSeconds: number;
}

export interface TokenServiceOptions extends TokenLifetimes {
  issuer: string;
  userKeys: KeyRing;
  agentKeys: KeyRing;
  clock: Clock;
  refreshTokens: RefreshTokenStore;
  agents: Pick<AgentStore, "find">;
  /** The trusted issuer's users (X-RB-14, X-RB-15), when one is configured: its tokens are user tokens too. */
  trusted?: { issuer: string; authenticate(token: string): Promise<UserPrincipal> };
}

export function createTokenService(o: TokenServiceOptions) {
  const nowSeconds = () => Math.floor(o.clock.now().getTime() / 1000);
  const iso = (seconds: number) => new Date(seconds * 1000).toISOString();

  const sign = async (keys: KeyRing, audience: string, subject: string, ttl: number, jti: string, extra: Record<string, unknown> = {}) => {
    const iat = nowSeconds();
    const key = await keys.signingKey();
    return {
      exp: iat + ttl,
      token: await new SignJWT(extra)
        .setProtectedHeader({ alg: key.alg, kid: key.kid, typ: "JWT" })
        .setIssuer(o.issuer)
        .setAudience(audience)
        .setSubject(subject)
        .setIssuedAt(iat)
        .setExpirationTime(iat + ttl)
        .setJti(jti)
        .sign(key.privateKey),
    };
  };

  /** Only a key the ring still publishes, by the token's `kid`. */
  const keyOf = (keys: KeyRing) => async (header: JWTHeaderParameters) => {
    const key = await keys.verificationKey(header.kid);
    if (!key) throw new joseErrors.JWKSNoMatchingKey();
    return key.publicKey;
  };

  const verify = async (token: string, keys: KeyRing, audience: string) => {
    const { payload } = await jwtVerify(token, keyOf(keys), {
      issuer: o.issuer,
      audience,
      algorithms: [keys.alg],
      currentDate: o.clock.now(),
      requiredClaims: ["sub", "exp", "iat", "jti"],
    });
    return payload as { sub: string; jti: string; exp: number; fam?: string };
  };

  /** A signed access token and refresh token of `familyId`, and the row that stores the refresh token. */
  async function signPair(userId: string, familyId: string): Promise<{ pair: TokenPair; row: RefreshTokenRow }> {
    const access = await sign(o.userKeys, AUDIENCE.access, userId, ACCESS_TOKEN_TTL_SECONDS, randomUUID());
    const refreshId = randomUUID();
    const refresh = await sign(o.userKeys, AUDIENCE.refresh, userId, o.refreshTtlSeconds, refreshId, { fam: familyId });
    const row: RefreshTokenRow = {
      id: refreshId,
      family_id: familyId,
      user_id: userId,
      token_hash: sha256Hex(refresh.token),
      expires_at: iso(refresh.exp),
      used_at: null,
      revoked_at: null,
      created_at: o.clock.now().toISOString(),
    };
    return { pair: { accessToken: access.token, refreshToken: refresh.token, expiresAt: iso(access.exp) }, row };
  }

  /** Issues the token pair of a new login: a new refresh family. */
  async function issuePair(userId: string): Promise<TokenPair> {
    const { pair, row } = await signPair(userId, randomUUID());
    await o.refreshTokens.insert(row);
    return pair;
  }

  const invalidRefresh = () =>
    badCredentials("invalid_refresh_token", "The refresh token is invalid, expired or already used. Log in again.");

  /**
   * Rotates a refresh token: exactly one caller can use it; a second use revokes the family
   * (X-RB-1). Revocation is the family's (X-RB-12): the claim that retires the token also checks
   * the family, so a successor stored by a refresh that raced a revocation is refused like the rest.
   */
  async function rotate(refreshToken: string): Promise<TokenPair> {
    let claims: Awaited<ReturnType<typeof verify>>;
    try {
      claims = await verify(refreshToken, o.userKeys, AUDIENCE.refresh);
    } catch {
      throw invalidRefresh();
    }
    const row = await o.refreshTokens.find(claims.jti);
    if (!row || !safeEqual(row.token_hash, sha256Hex(refreshToken))) throw invalidRefresh();
    if (row.revoked_at || row.family_revoked_at) throw invalidRefresh();
    if (row.used_at) return reused(row.family_id);
    // Signed first, so the transaction that decides holds only the claim and the insert.
    const { pair, row: successor } = await signPair(row.user_id, row.family_id);
    const won = await o.refreshTokens.rotate({ id: row.id, familyId: row.family_id, at: o.clock.now().toISOString() }, successor);
    // Lost: another caller retired it first (a reuse, as above), or the family was revoked meanwhile.
    return won ? pair : reused(row.family_id);
  }

  /** A retired token came back: someone holds a copy. Revoke everything issued from this login. */
  async function reused(familyId: string): Promise<never> {
    await o.refreshTokens.revokeFamily(familyId, o.clock.now().toISOString());
    throw invalidRefresh();
  }

  /** Revokes the refresh token's family (X-RB-8, X-RB-12); silent on anything unknown (RFC 7009 §2.2 style). */
  async function revoke(refreshToken: string): Promise<void> {
    try {
      const claims = await verify(refreshToken, o.userKeys, AUDIENCE.refresh);
      const row = await o.refreshTokens.find(claims.jti);
      if (row && safeEqual(row.token_hash, sha256Hex(refreshToken)))
        await o.refreshTokens.revokeFamily(row.family_id, o.clock.now().toISOString());
    } catch (err) {
      if (!(err instanceof joseErrors.JOSEError)) throw err;
    }
  }

  async function issueAgentToken(agentId: string): Promise<{ agentToken: string; expiresAt: string }> {
    const t = await sign(o.agentKeys, AUDIENCE.agent, agentId, o.agentTtlSeconds, randomUUID());
    return { agentToken: t.token, expiresAt: iso(t.exp) };
  }

  const challenge = (detail: string, token: string | undefined) =>
    token === undefined ? unauthenticated(REALM, detail) : unauthenticated(REALM, detail, "invalid_token");

  /** Security handler of `UserAuth`. */
  async function authenticateUser(token: string | undefined): Promise<UserPrincipal> {
    if (!token) throw challenge("This operation needs an access token: Authorization: Bearer <ACCESS_TOKEN>.", undefined);
    // The unverified `iss` only routes the token to the one verifier that may accept it; that verifier checks everything.
    if (o.trusted && issuerOf(token) === o.trusted.issuer) return o.trusted.authenticate(token);
    try {
      const claims = await verify(token, o.userKeys, AUDIENCE.access);
      return { kind: "user", userId: claims.sub };
    } catch (err) {
      throw challenge(
        foreignTokenDetail(err, token, { issuer: o.issuer, keys: o.userKeys }, "access") ?? describe(err, "access token"),
        token,
      );
    }
  }

  /** Security handler of `AgentAuth`: a valid agent token of an agent that still exists. */
  async function authenticateAgent(token: string | undefined): Promise<AgentPrincipal> {
    if (!token) throw challenge("This operation needs an agent token: Authorization: Bearer <AGENT_TOKEN>.", undefined);
    let claims: Awaited<ReturnType<typeof verify>>;
    try {
      claims = await verify(token, o.agentKeys, AUDIENCE.agent);
    } catch (err) {
      throw challenge(
        foreignTokenDetail(err, token, { issuer: o.issuer, keys: o.agentKeys }, "agent") ?? describe(err, "agent token"),
        token,
      );
    }
    const agent = await o.agents.find(claims.sub);
    if (!agent || agent.revoked_at) throw challenge("The agent token was revoked.", token);
    return { kind: "agent", agentId: agent.id, ownerId: agent.owner_id };
  }

  return { issuePair, rotate, revoke, issueAgentToken, authenticateUser, authenticateAgent };
}

function describe(err: unknown, what: string): string {
  if (err instanceof joseErrors.JWTExpired) return `The ${what} expired.`;
  if (err instanceof joseErrors.JWTClaimValidationFailed) return `The ${what} is not valid here (${err.claim} claim).`;
  if (err instanceof joseErrors.JOSEError) return `The ${what} is malformed or its signature is invalid.`;
  throw err;
}

export type TokenService = ReturnType<typeof createTokenService>;
