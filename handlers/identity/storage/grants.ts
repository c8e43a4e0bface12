/**
 * The grants store: authorization codes, the grants their exchange creates, each grant's refresh
 * tokens, access tokens revoked one by one, and the state an access token's liveness is decided
 * from (X-ID-TOK-5). The interface and its portable knex implementation; sqlite/grants.ts and
 * postgres/grants.ts replace the token endpoint's four operations (and the liveness read on
 * SQLite) with prepared statements, and storage/index.ts picks one once.
 *
 * Single use, in every implementation: a code is consumed, and a refresh token rotated, by one
 * conditional UPDATE whose row count decides which of concurrent callers wins (ADR 0002); the
 * loser writes nothing.
 */
import type { Knex } from "knex";
import type { Tx } from "../../../server/storage/transaction.ts";
import {
  type CodeRow,
  codes,
  type GrantRow,
  grants,
  type RefreshRow,
  refreshTokens,
  revokedAccessTokens,
  type UserRow,
  users,
} from "./schema.ts";

export interface GrantStore {
  insertCode(row: CodeRow, tx?: Tx): Promise<void>;
  findCode(codeHash: string): Promise<CodeRow | undefined>;
  /** The code (by hash) and the user it was issued to (undefined if deleted since). */
  findCodeForExchange(codeHash: string): Promise<{ code: CodeRow; user: UserRow | undefined } | undefined>;
  /**
   * Consumes the code if it is unused and unexpired at `now`, then stores its grant and the first
   * refresh token (if any), in one transaction. False when another exchange won (nothing stored).
   */
  redeemCode(o: RedeemCode): Promise<boolean>;

  findGrant(id: string, tx?: Tx): Promise<GrantRow | undefined>;
  /** Revoking ends everything issued from the grant at once: its end is brought back to `at` (never moved later). */
  /** Revokes the grant unless it was already; true when this call revoked it. */
  revokeGrant(id: string, at: string, tx?: Tx): Promise<boolean>;

  findRefreshByHash(tokenHash: string, tx?: Tx): Promise<RefreshRow | undefined>;
  findRefreshById(id: string, tx?: Tx): Promise<RefreshRow | undefined>;
  /** The refresh token (by hash), its grant and the grant's user. */
  findRefreshForRotation(
    tokenHash: string,
  ): Promise<{ row: RefreshRow; grant: GrantRow | undefined; user: UserRow | undefined } | undefined>;
  /**
   * Marks `rowId` used (storing the sealed answer for the grace window) if it was unused, stores
   * its successor and forgets the parent's answer, in one transaction; and moves the grant's end
   * to `grantEndsAt` when given (the successor outlives it). False when another won.
   */
  rotateRefresh(o: RotateRefresh): Promise<boolean>;

  /** Revokes one access token (RFC 7009) until it would have expired; again is a no-op. */
  revokeAccessToken(jti: string, expiresAt: string): Promise<void>;
  /** What X-ID-TOK-5 decides an access token's liveness from; undefined when its application (by client id) or user is gone. */
  accessTokenState(q: AccessTokenQuery): Promise<AccessTokenState | undefined>;
  /**
   * Ends everything issued to the user (a password reset, X-ID-RST-5): every grant not yet revoked
   * is revoked at `at` as revokeGrant does (its refresh family and access tokens end), and every
   * code not yet exchanged is consumed, so none of them makes a grant afterwards.
   */
  revokeAllOfUser(userId: string, at: string, tx?: Tx): Promise<void>;
}

export interface RedeemCode {
  codeHash: string;
  now: string;
  grant: GrantRow;
  refresh: RefreshRow | undefined;
}
export interface RotateRefresh {
  rowId: string;
  parentId: string | null;
  child: RefreshRow;
  sealedAnswer: string;
  now: string;
  grantEndsAt?: string | undefined;
}

export interface AccessTokenQuery {
  jti: string;
  grantId: string | undefined;
  clientId: string;
  userId: string;
}
export interface AccessTokenState {
  applicationId: string;
  enabled: boolean;
  tokensNotBefore: string | null;
  /** The grant named by the token's `jti`; undefined when there is none (or it is gone). */
  grant: { id: string; application_id: string; user_id: string; created_at: string; revoked_at: string | null } | undefined;
  /** The token was revoked alone (RFC 7009). */
  revoked: boolean;
  /** The token's `sub` is a user that exists (false for a client's own token, X-ID-CC-8, or a deleted user). */
  userExists: boolean;
}

/**
 * The liveness read, on every use of an access token (userinfo, introspection, every /api/* call):
 * the token's application by client id, its user, its grant and its own revocation row, in one
 * statement of four primary-key or unique-index lookups (test/storage/query-plans.test.ts checks
 * each uses a key). Bindings in order: `accessTokenStateBindings`.
 */
export const ACCESS_TOKEN_STATE_SQL =
  "SELECT a.id AS application_id, a.enabled AS enabled, a.tokens_not_before AS tokens_not_before, " +
  "g.id AS grant_id, g.application_id AS grant_application_id, g.user_id AS grant_user_id, g.created_at AS grant_created_at, g.revoked_at AS grant_revoked_at, " +
  "r.jti AS revoked_jti, u.id AS user_id " +
  "FROM applications a LEFT JOIN users u ON u.id = ? " +
  "LEFT JOIN oauth_grants g ON g.id = ? " +
  "LEFT JOIN oauth_revoked_access_tokens r ON r.jti = ? " +
  "WHERE a.client_id = ?";

/** User id, grant id (NULL matches nothing), jti, client id. */
export const accessTokenStateBindings = (q: AccessTokenQuery): Array<string | null> => [q.userId, q.grantId ?? null, q.jti, q.clientId];

/** The state out of the liveness read's row. */
export function accessTokenStateOf(row: Record<string, unknown> | undefined): AccessTokenState | undefined {
  if (!row) return undefined;
  const text = (v: unknown) => (v === null || v === undefined ? null : String(v));
  return {
    applicationId: String(row.application_id),
    enabled: Boolean(row.enabled),
    tokensNotBefore: text(row.tokens_not_before),
    grant:
      row.grant_id === null || row.grant_id === undefined
        ? undefined
        : {
            id: String(row.grant_id),
            application_id: String(row.grant_application_id),
            user_id: String(row.grant_user_id),
            created_at: String(row.grant_created_at),
            revoked_at: text(row.grant_revoked_at),
          },
    revoked: row.revoked_jti !== null && row.revoked_jti !== undefined,
    userExists: row.user_id !== null && row.user_id !== undefined,
  };
}

/** The code exchange's read: the code and its user, as one joined row (`c__…`, `u__…`). */
export const codeWithUserOf = (row: Record<string, unknown> | undefined) => {
  const code = row && codes.pick(row, "c");
  return code ? { code, user: users.pick(row!, "u") } : undefined;
};

/** The refresh grant's read: the token, its grant and the grant's user, as one joined row (`r__…`, `g__…`, `u__…`). */
export const refreshWithGrantOf = (row: Record<string, unknown> | undefined) => {
  const token = row && refreshTokens.pick(row, "r");
  return token ? { row: token, grant: grants.pick(row!, "g"), user: users.pick(row!, "u") } : undefined;
};

export function knexGrants(db: Knex): GrantStore {
  const codeWithUser = () =>
    db(`${codes.name} as c`)
      .leftJoin(`${users.name} as u`, "u.id", "c.user_id")
      .select(db.raw(`${codes.select("c")}, ${users.select("u")}`));
  const refreshWithGrant = () =>
    db(`${refreshTokens.name} as r`)
      .leftJoin(`${grants.name} as g`, "g.id", "r.grant_id")
      .leftJoin(`${users.name} as u`, "u.id", "g.user_id")
      .select(db.raw(`${refreshTokens.select("r")}, ${grants.select("g")}, ${users.select("u")}`));

  return {
    async insertCode(row, tx) {
      await (tx ?? db)(codes.name).insert(row);
    },
    findCode: (codeHash) => db<CodeRow>(codes.name).where({ code_hash: codeHash }).first(),
    findCodeForExchange: async (codeHash) => codeWithUserOf(await codeWithUser().where("c.code_hash", codeHash).first()),
    redeemCode: ({ codeHash, now, grant, refresh }) =>
      db.transaction(async (tx) => {
        const consumed = await tx(codes.name)
          .where({ code_hash: codeHash })
          .whereNull("consumed_at")
          .andWhere("expires_at", ">", now)
          .update({ consumed_at: now });
        if (consumed !== 1) return false;
        await tx(grants.name).insert(grant);
        if (refresh) await tx(refreshTokens.name).insert(refresh);
        return true;
      }),

    findGrant: (id, tx) => (tx ?? db)<GrantRow>(grants.name).where({ id }).first(),
    async revokeGrant(id, at, tx) {
      const on = tx ?? db;
      const revoked = await on(grants.name)
        .where({ id })
        .whereNull("revoked_at")
        .update({ revoked_at: at, ends_at: on.raw("CASE WHEN ends_at IS NOT NULL AND ends_at < ? THEN ends_at ELSE ? END", [at, at]) });
      return Number(revoked) > 0;
    },

    findRefreshByHash: (tokenHash, tx) => (tx ?? db)<RefreshRow>(refreshTokens.name).where({ token_hash: tokenHash }).first(),
    findRefreshById: (id, tx) => (tx ?? db)<RefreshRow>(refreshTokens.name).where({ id }).first(),
    findRefreshForRotation: async (tokenHash) => refreshWithGrantOf(await refreshWithGrant().where("r.token_hash", tokenHash).first()),
    rotateRefresh: ({ rowId, parentId, child, sealedAnswer, now, grantEndsAt }) =>
      db.transaction(async (tx) => {
        const rotated = await tx(refreshTokens.name)
          .where({ id: rowId })
          .whereNull("used_at")
          .update({ used_at: now, child_id: child.id, rotation_answer: sealedAnswer });
        if (rotated !== 1) return false;
        await tx(refreshTokens.name).insert(child);
        if (parentId) await tx(refreshTokens.name).where({ id: parentId }).update({ rotation_answer: null });
        if (grantEndsAt)
          await tx(grants.name)
            .where({ id: child.grant_id })
            .whereNull("revoked_at")
            .andWhere((q) => q.whereNull("ends_at").orWhere("ends_at", "<", grantEndsAt))
            .update({ ends_at: grantEndsAt });
        return true;
      }),

    async revokeAccessToken(jti, expiresAt) {
      await db(revokedAccessTokens.name).insert({ jti, expires_at: expiresAt }).onConflict("jti").ignore();
    },
    accessTokenState: async (q) => {
      const result = (await db.raw(ACCESS_TOKEN_STATE_SQL, accessTokenStateBindings(q))) as
        | { rows?: Record<string, unknown>[] }
        | Record<string, unknown>[];
      return accessTokenStateOf(Array.isArray(result) ? result[0] : result.rows?.[0]);
    },
    async revokeAllOfUser(userId, at, tx) {
      const on = tx ?? db;
      await on(codes.name).where({ user_id: userId }).whereNull("consumed_at").update({ consumed_at: at });
      await on(grants.name)
        .where({ user_id: userId })
        .whereNull("revoked_at")
        .update({ revoked_at: at, ends_at: on.raw("CASE WHEN ends_at IS NOT NULL AND ends_at < ? THEN ends_at ELSE ? END", [at, at]) });
    },
  };
}
