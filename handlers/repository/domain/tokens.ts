/**
 * The two token systems of the repository-and-build service.
 *
 * - User tokens: access (aud `repository-api`, 1 hour, the seed's limit) and refresh (aud
 *   `repository-refresh`, rotating, single-use, family revoked on reuse: RFC 9700 §4.14.2), both
 *   signed with the user key.
 * - Agent tokens: aud `build-agent`, signed with a separate agent key, revocable by deleting the agent.
 *
 * Verification pins the algorithm (EdDSA), issuer and audience, so `alg: none`, a token of the other
 * system, or one signed with another key are all refused. Each system's keys are a ring an operator
 * rotates (X-RB-11, server/keys/): tokens are signed with its key of the moment and verified with
 * any key it still publishes.
 */
import { randomUUID } from "node:crypto";
import { foreignTokenDetail } from "./foreign-tokens.ts";
import { SignJWT, jwtVerify, errors as joseErrors, type JWTHeaderParameters } from "jose";
import type { Clock } from "../../../server/clock.ts";
import type { KeyRing } from "../../../server/keys/ring.ts";
import { badCredentials, unauthenticated } from "../../../server/domain/errors.ts";
import { sha256Hex } from "../../../server/security/tokens.ts";
import type { RepositoryQueries } from "../storage/queries.ts";

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

export interface TokenServiceOptions {
  issuer: string;
  userKeys: KeyRing;
  agentKeys: KeyRing;
  clock: Clock;
  queries: RepositoryQueries;
  refreshTtlSeconds: number;
  agentTtlSeconds: number;
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

  /** Issues an access token and a refresh token of `familyId` (a new family at login). */
  async function issuePair(userId: string, familyId: string = randomUUID()): Promise<TokenPair> {
    const access = await sign(o.userKeys, AUDIENCE.access, userId, ACCESS_TOKEN_TTL_SECONDS, randomUUID());
    const refreshId = randomUUID();
    const refresh = await sign(o.userKeys, AUDIENCE.refresh, userId, o.refreshTtlSeconds, refreshId, { fam: familyId });
    const refreshToken = refresh.token;
    await o.queries.insertRefreshToken({
      id: refreshId,
      family_id: familyId,
      user_id: userId,
      token_hash: sha256Hex(refreshToken),
      expires_at: iso(refresh.exp),
      used_at: null,
      revoked_at: null,
      created_at: o.clock.now().toISOString(),
    });
    return { accessToken: access.token, refreshToken, expiresAt: iso(access.exp) };
  }

  const invalidRefresh = () =>
    badCredentials("invalid_refresh_token", "The refresh token is invalid, expired or already used. Log in again.");

  /** Rotates a refresh token: exactly one caller can use it; a second use revokes the family. */
  async function rotate(refreshToken: string): Promise<TokenPair> {
    let claims: Awaited<ReturnType<typeof verify>>;
    try {
      claims = await verify(refreshToken, o.userKeys, AUDIENCE.refresh);
    } catch {
      throw invalidRefresh();
    }
    const row = await o.queries.findRefreshToken(claims.jti);
    if (!row || row.token_hash !== sha256Hex(refreshToken)) throw invalidRefresh();
    const now = o.clock.now().toISOString();
    if (row.revoked_at) throw invalidRefresh();
    const won = await o.queries.claimRefreshToken(row.id, now);
    if (!won) {
      // Reuse of a rotated token: someone holds a copy. Revoke everything issued from this login.
      await o.queries.revokeRefreshFamily(row.family_id, now);
      throw invalidRefresh();
    }
    return issuePair(row.user_id, row.family_id);
  }

  /** Revokes the refresh token's family; silent on anything unknown (RFC 7009 §2.2 style). */
  async function revoke(refreshToken: string): Promise<void> {
    try {
      const claims = await verify(refreshToken, o.userKeys, AUDIENCE.refresh);
      const row = await o.queries.findRefreshToken(claims.jti);
      if (row && row.token_hash === sha256Hex(refreshToken))
        await o.queries.revokeRefreshFamily(row.family_id, o.clock.now().toISOString());
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
    const agent = await o.queries.findAgent(claims.sub);
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
