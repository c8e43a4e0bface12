/**
 * The one read behind X-ID-TOK-5 (domain/token-liveness.ts), on every use of an access token
 * (userinfo, introspection, every /api/* call): the token's application by client id, its user,
 * its grant and its own revocation row, in one statement of four primary-key or unique-index
 * lookups. On SQLite a statement prepared once (server/storage/sqlite-prepared.ts); elsewhere the
 * same SQL through knex.
 */
import type { Knex } from "knex";
import { isSqlite } from "../../../server/storage/dialect.ts";
import { withPrepared } from "../../../server/storage/sqlite/statements.ts";

export interface AccessTokenState {
  applicationId: string;
  enabled: boolean;
  tokensNotBefore: string | null;
  /** The grant named by the token's `jti`; undefined when there is none (or it is gone). */
  grant: { id: string; application_id: string; user_id: string; created_at: string; revoked_at: string | null } | undefined;
  /** The token was revoked alone (RFC 7009). */
  revoked: boolean;
}

/** Undefined when the application (by client id) or the user no longer exists. */
export type AccessTokenStateQuery = (q: {
  jti: string;
  grantId: string | undefined;
  clientId: string;
  userId: string;
}) => Promise<AccessTokenState | undefined>;

// Bindings in order: user id, grant id (NULL matches nothing), jti, client id.
/** The statement (test/storage-query-plans.test.ts checks that each of its lookups uses a key). */
export const SQL = {
  state:
    "SELECT a.id AS application_id, a.enabled AS enabled, a.tokens_not_before AS tokens_not_before, " +
    "g.id AS grant_id, g.application_id AS grant_application_id, g.user_id AS grant_user_id, g.created_at AS grant_created_at, g.revoked_at AS grant_revoked_at, " +
    "r.jti AS revoked_jti " +
    "FROM applications a JOIN users u ON u.id = ? " +
    "LEFT JOIN oauth_grants g ON g.id = ? " +
    "LEFT JOIN oauth_revoked_access_tokens r ON r.jti = ? " +
    "WHERE a.client_id = ?",
};

function toState(row: Record<string, unknown> | undefined): AccessTokenState | undefined {
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
  };
}

export function createAccessTokenStateQuery(db: Knex): AccessTokenStateQuery {
  const bindings = (q: Parameters<AccessTokenStateQuery>[0]) => [q.userId, q.grantId ?? null, q.jti, q.clientId];
  if (!isSqlite(db)) {
    return async (q) => toState((await db.raw(SQL.state, bindings(q))).rows[0]);
  }
  // `= +?` on SQLite: prepared once, not re-prepared on every run (see sqlite-prepared.ts). Not in
  // the shared text: PostgreSQL has no unary plus for an untyped parameter.
  const run = withPrepared(db, { state: SQL.state.replaceAll("= ?", "= +?") });
  return (q) => run((s) => toState(s.state.get(...bindings(q))));
}
