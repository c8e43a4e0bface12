/**
 * What every grant of the token endpoint answers with (RFC 6749 §5.1): the signed access token,
 * a refresh token value when `offline_access` was granted, the ID token when `openid` was. Signing
 * happens here, before any transaction opens (so the grants' one short transaction
 * only stores what was signed).
 */
import { createHash } from "node:crypto";
import type { operations } from "../../../../../generated/types/identity.ts";
import type { Clock } from "../../../../../server/clock.ts";
import { pooledRandomBytes } from "../../../../../server/security/random.ts";
import { newOneTimeSecret, type SecretKeys, secretStorageKey } from "../../../../../server/security/tokens.ts";
import { uuidv7 } from "../../../../../server/ids.ts";
import type { UserRow } from "../../../storage/schema.ts";
import type { AccessTokens } from "../../access-tokens.ts";
import { profileClaims } from "../profile-claims.ts";
import { formatScopes } from "../scopes.ts";
import { acrOf } from "../../factors/levels.ts";

export const REFRESH_TTL_SECONDS = 30 * 24 * 3600; // X-ID-TOK-2
/** What every refresh token begins with: revocation and introspection tell it from a JWT by it. */
export const REFRESH_TOKEN_PREFIX = "rt_";
export const ID_TOKEN_TTL_SECONDS = 3600; // X-ID-TOK-4

/** The token endpoint's success body, as the contract types it (spec/identity/token.tsp). */
export type TokenResponse = operations["token"]["responses"][200]["content"]["application/json"];

/** Access token ids start with their grant's id (grantOfJti), so revoking the grant revokes them without a row per token. */
const accessJti = (grantId: string) => `${grantId}.${pooledRandomBytes(9).toString("base64url")}`;

/** OpenID Connect Core §3.1.3.6: left half of SHA-256 of the access token, base64url. */
const atHash = (accessToken: string) => createHash("sha256").update(accessToken, "ascii").digest().subarray(0, 16).toString("base64url");

export const iso = (ms: number) => new Date(ms).toISOString();

export function createTokenIssuer(deps: { clock: Clock; issuer: string; accessTokens: AccessTokens; tokenKeys: SecretKeys }) {
  const { clock, issuer, accessTokens, tokenKeys } = deps;

  /** X-ID-TOK-4. */
  async function idToken(
    user: UserRow,
    clientId: string,
    scopes: string[],
    authTime: number,
    nonce: string | undefined,
    accessToken: string,
    amr: readonly string[],
    sid: string | undefined,
  ) {
    const iat = Math.floor(clock.now().getTime() / 1000);
    const claims: Record<string, unknown> = {
      iss: issuer,
      sub: user.id,
      aud: clientId,
      iat,
      exp: iat + ID_TOKEN_TTL_SECONDS,
      auth_time: authTime,
      at_hash: atHash(accessToken),
      // X-ID-MFA-5: how the user signed in (RFC 8176) and the level that makes (its acr).
      amr: [...amr],
      acr: acrOf(amr),
    };
    if (nonce !== undefined) claims.nonce = nonce;
    // X-ID-LOGOUT-6: the session signed in with; grants from before sessions had one carry none.
    if (sid !== undefined) claims.sid = sid;
    if (scopes.includes("email")) Object.assign(claims, { email: user.email, email_verified: Boolean(user.email_verified) });
    if (scopes.includes("profile")) Object.assign(claims, profileClaims(user));
    return accessTokens.sign("JWT", claims);
  }

  /** Signs the answer of a grant (no storage): access token, refresh token value, ID token. */
  async function mint(o: {
    grantId: string;
    user: UserRow;
    clientId: string;
    scopes: string[];
    grantScopes: string[];
    authTime: number;
    nonce?: string | undefined;
    /** The methods of the sign-in the grant came from (X-ID-MFA-5). */
    amr: readonly string[];
    /** The grant's resource (RFC 8707): the access token's `aud` (X-ID-RES-3); null or absent, the client. */
    resource?: string | null | undefined;
    /** The DPoP key the access token is bound to (X-ID-DPOP-3): then its type is `DPoP`. */
    jkt?: string | undefined;
    /** The session id of the sign-in the grant came from (X-ID-LOGOUT-6). */
    sid?: string | undefined;
  }) {
    const access = await accessTokens.issue({
      userId: o.user.id,
      clientId: o.clientId,
      scopes: o.scopes,
      jti: accessJti(o.grantId),
      audience: o.resource ?? undefined,
      ...(o.jkt ? { jkt: o.jkt } : {}),
    });
    const answer: TokenResponse = {
      access_token: access.token,
      token_type: o.jkt ? "DPoP" : "Bearer",
      expires_in: access.expiresIn,
      scope: formatScopes(o.scopes),
    };
    // The refresh token follows the grant, not the narrowed request (RFC 6749 §6).
    const refresh = o.grantScopes.includes("offline_access")
      ? newOneTimeSecret(tokenKeys, REFRESH_TOKEN_PREFIX, clock.now().getTime())
      : undefined;
    if (refresh) answer.refresh_token = refresh;
    if (o.scopes.includes("openid"))
      answer.id_token = await idToken(o.user, o.clientId, o.scopes, o.authTime, o.nonce, access.token, o.amr, o.sid);
    return answer;
  }

  /** The row a refresh token value is stored as (its hash only). */
  const refreshRow = (token: string, grantId: string, parentId: string | null, nowMs: number) => ({
    // Time-ordered, so each group commit appends its rows at the end of the primary key instead of
    // dirtying a random page per row: fewer pages to write and fsync per COMMIT.
    id: uuidv7(nowMs),
    token_hash: secretStorageKey(token, REFRESH_TOKEN_PREFIX),
    grant_id: grantId,
    parent_id: parentId,
    created_at: iso(nowMs),
    expires_at: iso(nowMs + REFRESH_TTL_SECONDS * 1000),
    used_at: null,
    child_id: null,
    rotation_answer: null,
  });

  return { mint, refreshRow };
}

export type TokenIssuer = ReturnType<typeof createTokenIssuer>;
