/**
 * The token endpoint's grants (RFC 6749 §4.1.3, §6; RFC 9700 §4.14; X-ID-TOK-1..4), revocation
 * (RFC 7009) and introspection (RFC 7662).
 *
 * Speed matters here (the hot path): tokens are signed before the transaction opens, and each
 * exchange is one short transaction whose first statement is the conditional UPDATE that decides
 * which caller wins. Signing keys are read from the ring's memory (server/keys/); client secrets are HMACs. Each grant
 * reads its rows in one query (storage/token-path-queries.ts: prepared statements on SQLite).
 */
import { createHash, randomUUID } from "node:crypto";
import type { Clock } from "../../../../server/clock.ts";
import { pooledRandomBytes } from "../../../../server/security/random.ts";
import { randomSecret, sha256Hex } from "../../../../server/security/tokens.ts";
import type { Application, CoreQueries, UserRow } from "../../storage/core-queries.ts";
import type { CodeRow, GrantRow, OAuthQueries } from "../../storage/oauth-queries.ts";
import type { TokenPathQueries } from "../../storage/token-path-queries.ts";
import type { AccessTokens } from "../access-tokens.ts";
import { endedByDisabling, grantLive } from "../token-liveness.ts";
import { grantEndsAt, movedGrantEnd } from "./grant-end.ts";
import type { KeyRing } from "../../../../server/keys/ring.ts";
import { invalidGrant, invalidRequest, invalidScope, OAuthError } from "./errors.ts";
import { isValidVerifier, verifierMatches } from "./pkce.ts";
import { formatScopes, parseScopes } from "./scopes.ts";
import type { Secrets } from "./secrets.ts";

export const REFRESH_TTL_SECONDS = 30 * 24 * 3600; // X-ID-TOK-2
export const REFRESH_GRACE_SECONDS = 30; // X-ID-TOK-2: concurrent retry of the previous token
export const ID_TOKEN_TTL_SECONDS = 3600; // X-ID-TOK-4

export interface TokenAnswer {
  access_token: string;
  token_type: "Bearer";
  expires_in: number;
  scope: string;
  refresh_token?: string;
  id_token?: string;
}

/** Access token ids start with their grant's id (grantOfJti), so revoking the grant revokes them without a row per token. */
const accessJti = (grantId: string) => `${grantId}.${pooledRandomBytes(9).toString("base64url")}`;

export function createTokens(deps: { core: CoreQueries; q: OAuthQueries; hot: TokenPathQueries; clock: Clock; issuer: string; keys: KeyRing; accessTokens: AccessTokens; secrets: Secrets }) {
  const { core, q, hot, clock, issuer, keys, accessTokens, secrets } = deps;
  const iso = (ms: number) => new Date(ms).toISOString();

  /** OpenID Connect Core §3.1.3.6: left half of SHA-256 of the access token, base64url. */
  const atHash = (accessToken: string) => createHash("sha256").update(accessToken, "ascii").digest().subarray(0, 16).toString("base64url");

  /** X-ID-TOK-4. */
  async function idToken(user: UserRow, clientId: string, scopes: string[], authTime: number, nonce: string | undefined, accessToken: string) {
    const iat = Math.floor(clock.now().getTime() / 1000);
    const claims: Record<string, unknown> = { iss: issuer, sub: user.id, aud: clientId, iat, exp: iat + ID_TOKEN_TTL_SECONDS, auth_time: authTime, at_hash: atHash(accessToken) };
    if (nonce !== undefined) claims.nonce = nonce;
    if (scopes.includes("email")) Object.assign(claims, { email: user.email, email_verified: Boolean(user.email_verified) });
    if (scopes.includes("profile")) Object.assign(claims, profileClaims(user));
    return accessTokens.sign("JWT", claims);
  }

  /** Signs the answer of a grant (no storage): access token, refresh token value, ID token. */
  async function mint(o: { grantId: string; user: UserRow; clientId: string; scopes: string[]; grantScopes: string[]; authTime: number; nonce?: string | undefined }) {
    const access = await accessTokens.issue({ userId: o.user.id, clientId: o.clientId, scopes: o.scopes, jti: accessJti(o.grantId) });
    const answer: TokenAnswer = { access_token: access.token, token_type: "Bearer", expires_in: access.expiresIn, scope: formatScopes(o.scopes) };
    // The refresh token follows the grant, not the narrowed request (RFC 6749 §6).
    const refresh = o.grantScopes.includes("offline_access") ? `rt_${randomSecret(32)}` : undefined;
    if (refresh) answer.refresh_token = refresh;
    if (o.scopes.includes("openid")) answer.id_token = await idToken(o.user, o.clientId, o.scopes, o.authTime, o.nonce, access.token);
    return answer;
  }

  const refreshRow = (token: string, grantId: string, parentId: string | null, nowMs: number) => ({
    id: randomUUID(),
    token_hash: sha256Hex(token),
    grant_id: grantId,
    parent_id: parentId,
    created_at: iso(nowMs),
    expires_at: iso(nowMs + REFRESH_TTL_SECONDS * 1000),
    used_at: null,
    child_id: null,
    rotation_answer: null,
  });

  const codeInvalid = () => invalidGrant("The authorization code is invalid, expired or already used.");

  /**
   * `authorization_code` (RFC 6749 §4.1.3, RFC 7636 §4.6). The code is consumed by one conditional
   * UPDATE: of concurrent exchanges exactly one wins. A replay revokes what the code produced.
   */
  async function exchangeCode(app: Application, form: { code: string; redirect_uri: string; code_verifier?: string | undefined }): Promise<TokenAnswer> {
    if (form.code_verifier !== undefined && !isValidVerifier(form.code_verifier)) {
      throw invalidRequest("code_verifier must be 43 to 128 characters of A-Z a-z 0-9 - . _ ~.");
    }
    const now = clock.now().getTime();
    const found = await hot.findCodeForExchange(sha256Hex(form.code));
    const code = found?.code;
    if (!code || code.application_id !== app.id) throw codeInvalid();
    if (code.consumed_at) {
      await revokeGrant(code.grant_id);
      throw codeInvalid();
    }
    if (code.expires_at <= iso(now)) throw codeInvalid();
    // Issued before the application was last disabled: ended for good (X-ID-TOK-5).
    if (endedByDisabling(code.created_at, app)) throw codeInvalid();
    if (code.redirect_uri !== form.redirect_uri) throw invalidGrant("redirect_uri does not match the one of the authorization request.");
    checkPkce(code, form.code_verifier, app);
    const user = found.user;
    if (!user) throw codeInvalid();

    const scopes: string[] = JSON.parse(code.scopes);
    const authTime = Math.floor(Date.parse(code.auth_time) / 1000);
    const answer = await mint({ grantId: code.grant_id, user, clientId: app.clientId, scopes, grantScopes: scopes, authTime, nonce: code.nonce ?? undefined });
    const refresh = answer.refresh_token ? refreshRow(answer.refresh_token, code.grant_id, null, now) : undefined;
    const won = await hot.redeemCode({
      codeHash: code.code_hash,
      now: iso(now),
      grant: {
        id: code.grant_id, application_id: app.id, user_id: user.id, scopes: code.scopes, auth_time: code.auth_time, created_at: iso(now), revoked_at: null,
        ends_at: grantEndsAt(now, refresh?.expires_at),
      },
      refresh,
    });
    if (!won) {
      // Lost the race, or the code expired meanwhile: either way it is used up; a replay revokes.
      if ((await q.findCode(code.code_hash))?.consumed_at) await revokeGrant(code.grant_id);
      throw codeInvalid();
    }
    return answer;
  }

  /** RFC 7636 §4.6, plus the downgrade rule: a verifier for a code issued without a challenge is refused. */
  function checkPkce(code: CodeRow, verifier: string | undefined, app: Application): void {
    if (!code.code_challenge) {
      if (verifier !== undefined) throw invalidGrant("code_verifier was sent, but the authorization request had no code_challenge.");
      if (app.clientType === "public") throw invalidGrant("Public clients must use PKCE.");
      return;
    }
    if (verifier === undefined) throw invalidGrant("code_verifier is required: the authorization request had a code_challenge.");
    if (!verifierMatches(verifier, code.code_challenge, code.code_challenge_method === "plain" ? "plain" : "S256")) {
      throw invalidGrant("code_verifier does not match the code_challenge.");
    }
  }

  const refreshInvalid = () => invalidGrant("The refresh token is invalid, expired, revoked or already used.");

  /**
   * `refresh_token` (RFC 6749 §6, X-ID-TOK-2): rotation by one conditional UPDATE that also stores
   * the answer, sealed, for the grace window; reuse outside it revokes the family (RFC 9700 §4.14.2).
   */
  async function refresh(app: Application, form: { refresh_token: string; scope?: string | undefined }): Promise<TokenAnswer> {
    const now = clock.now().getTime();
    const found = await hot.findRefreshForRotation(sha256Hex(form.refresh_token));
    if (!found) throw refreshInvalid();
    const { row, grant } = found;
    if (!grant || grant.application_id !== app.id) throw refreshInvalid();
    if (!grantLive(grant, app) || row.expires_at <= iso(now)) throw refreshInvalid();

    const grantScopes: string[] = JSON.parse(grant.scopes);
    const requested = form.scope !== undefined ? parseScopes(form.scope) : grantScopes;
    if (form.scope !== undefined && requested.length === 0) throw invalidScope("scope must not be empty.");
    const wider = requested.filter((s) => !grantScopes.includes(s));
    if (wider.length) throw invalidScope(`The requested scope exceeds the scope granted: ${wider.join(" ")}.`);

    if (row.used_at) return retryOrRevoke(row.id, grant, now);

    const user = found.user;
    if (!user) throw refreshInvalid();
    const authTime = Math.floor(Date.parse(grant.auth_time) / 1000);
    const answer = await mint({ grantId: grant.id, user, clientId: app.clientId, scopes: requested, grantScopes, authTime });
    const child = refreshRow(answer.refresh_token!, grant.id, row.id, now);
    const won = await hot.rotateRefresh({
      rowId: row.id, parentId: row.parent_id, child, sealedAnswer: secrets.seal(JSON.stringify(answer)), now: iso(now), grantEndsAt: movedGrantEnd(grant.ends_at, child.expires_at),
    });
    return won ? answer : retryOrRevoke(row.id, grant, now);
  }

  /**
   * A rotated token came back. Within 30 seconds, while its successor is still unused, it is a
   * concurrent retry (a lost response, two tabs): the same answer again. Otherwise a copy is in
   * someone else's hands: revoke the family.
   */
  async function retryOrRevoke(rowId: string, grant: GrantRow, now: number): Promise<TokenAnswer> {
    const row = await q.findRefreshById(rowId);
    const child = row?.child_id ? await q.findRefreshById(row.child_id) : undefined;
    const inGrace = row?.used_at && now - Date.parse(row.used_at) <= REFRESH_GRACE_SECONDS * 1000;
    if (row && inGrace && child && !child.used_at && row.rotation_answer) {
      const opened = secrets.open(row.rotation_answer);
      if (opened) return JSON.parse(opened) as TokenAnswer;
    }
    await revokeGrant(grant.id);
    throw refreshInvalid();
  }

  async function revokeGrant(grantId: string): Promise<void> {
    await q.revokeGrant(grantId, clock.now().toISOString());
  }

  /** What a token is, for revocation and introspection; undefined when not ours, expired or revoked. */
  async function lookup(token: string, app: Application) {
    if (token.startsWith("rt_")) {
      const row = await q.findRefreshByHash(sha256Hex(token));
      if (!row) return undefined;
      const grant = await q.findGrant(row.grant_id);
      if (!grant) return undefined;
      // The owner's state decides (X-ID-TOK-5); another client's token is inactive for the caller anyway.
      const active = grantLive(grant, app) && !row.used_at && row.expires_at > clock.now().toISOString();
      return { kind: "refresh" as const, grant, row, active, ownedBy: grant.application_id === app.id };
    }
    if (token.split(".").length === 3) {
      let principal;
      try {
        principal = await accessTokens.verify(token);
      } catch {
        return undefined;
      }
      return { kind: "access" as const, principal, token, active: true, ownedBy: principal.clientId === app.clientId };
    }
    return undefined;
  }

  /**
   * RFC 7009: revoking a refresh token revokes its family and the access tokens issued from it;
   * an access token is revoked alone. Unknown or inactive: nothing to do (still 200). Another
   * client's token: `invalid_request`, and nothing is revoked.
   */
  async function revoke(app: Application, token: string): Promise<void> {
    if (isIdToken(token)) throw new OAuthError("unsupported_token_type", "Only access and refresh tokens can be revoked.");
    const found = await lookup(token, app);
    if (!found) return;
    if (!found.ownedBy) throw invalidRequest("The token was issued to another client.");
    if (found.kind === "refresh") return revokeGrant(found.grant.id);
    const exp = decodePayload(token)?.exp;
    await q.revokeAccessToken(found.principal.jti, iso(typeof exp === "number" ? exp * 1000 : clock.now().getTime() + 3600_000));
  }

  /** An ID token is a JWT with `typ: JWT` signed by us; access tokens are `at+jwt`. */
  function isIdToken(token: string): boolean {
    const header = decodeHeader(token);
    return header?.typ === "JWT" && typeof header.kid === "string" && keys.knows(header.kid);
  }

  /** RFC 7662 §2.2: only a token issued to the caller, active, is described. */
  async function introspect(app: Application, token: string): Promise<Record<string, unknown>> {
    const found = await lookup(token, app);
    if (!found || !found.active || !found.ownedBy) return { active: false };
    if (found.kind === "refresh") {
      const user = await core.findUserById(found.grant.user_id);
      return {
        active: true,
        scope: formatScopes(JSON.parse(found.grant.scopes)),
        client_id: app.clientId,
        ...(user ? { username: user.email } : {}),
        token_type: "refresh_token",
        exp: Math.floor(Date.parse(found.row.expires_at) / 1000),
        iat: Math.floor(Date.parse(found.row.created_at) / 1000),
        sub: found.grant.user_id,
        aud: app.clientId,
        iss: issuer,
      };
    }
    const payload = decodePayload(found.token) ?? {};
    const user = await core.findUserById(found.principal.userId);
    return {
      active: true,
      scope: formatScopes(found.principal.scopes),
      client_id: found.principal.clientId,
      ...(user ? { username: user.email } : {}),
      token_type: "Bearer",
      exp: payload.exp,
      iat: payload.iat,
      sub: found.principal.userId,
      aud: found.principal.clientId,
      iss: issuer,
      jti: found.principal.jti,
    };
  }

  return { exchangeCode, refresh, revoke, introspect, revokeGrant };
}

/** OpenID Connect standard claims of the `profile` scope (ID-SCOPE-1). */
export function profileClaims(user: UserRow) {
  return {
    name: [user.first_name, user.last_name].filter(Boolean).join(" "),
    given_name: user.first_name,
    family_name: user.last_name,
    updated_at: Math.floor(Date.parse(user.updated_at) / 1000),
  };
}

function decodePart(token: string, index: number): Record<string, unknown> | undefined {
  try {
    const value = JSON.parse(Buffer.from(token.split(".")[index] ?? "", "base64url").toString("utf8"));
    return value && typeof value === "object" ? value : undefined;
  } catch {
    return undefined;
  }
}
const decodeHeader = (token: string) => decodePart(token, 0);
const decodePayload = (token: string) => decodePart(token, 1);

export type Tokens = ReturnType<typeof createTokens>;
