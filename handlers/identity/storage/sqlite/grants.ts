/**
 * The grants store on SQLite: the token endpoint's reads and writes, and an access token's
 * liveness read, as statements prepared once (server/storage/sqlite/statements.ts); the writes
 * group-committed (server/storage/sqlite/group-commit.ts: one fsync for the exchanges that arrive
 * together, each answered only after it is durable). The conditional UPDATE that starts each write
 * decides which caller wins; the writes run in arrival order on the one connection.
 */
import type { Knex } from "knex";
import { groupCommit } from "../../../../server/storage/sqlite/group-commit.ts";
import { withPrepared } from "../../../../server/storage/sqlite/statements.ts";
import {
  ACCESS_TOKEN_STATE_SQL,
  accessTokenStateBindings,
  accessTokenStateOf,
  codeWithUserOf,
  type GrantStore,
  knexGrants,
  refreshWithGrantOf,
} from "../grants.ts";
import { codes, grants, refreshTokens, users } from "../schema.ts";

const STATEMENTS = {
  codeWithUser: `SELECT ${codes.select("c")}, ${users.select("u")} FROM ${codes.name} c LEFT JOIN ${users.name} u ON u.id = c.user_id WHERE c.code_hash = ?`,
  consumeCode: `UPDATE ${codes.name} SET consumed_at = ? WHERE code_hash = ? AND consumed_at IS NULL AND expires_at > ?`,
  insertGrant: grants.insertNamed(),
  insertRefresh: refreshTokens.insertNamed(),
  refreshWithGrantAndUser:
    `SELECT ${refreshTokens.select("r")}, ${grants.select("g")}, ${users.select("u")} FROM ${refreshTokens.name} r ` +
    `LEFT JOIN ${grants.name} g ON g.id = r.grant_id LEFT JOIN ${users.name} u ON u.id = g.user_id WHERE r.token_hash = ?`,
  rotate: `UPDATE ${refreshTokens.name} SET used_at = ?, child_id = ?, rotation_answer = ? WHERE id = ? AND used_at IS NULL`,
  forgetAnswer: `UPDATE ${refreshTokens.name} SET rotation_answer = NULL WHERE id = ?`,
  moveGrantEnd: `UPDATE ${grants.name} SET ends_at = ? WHERE id = ? AND revoked_at IS NULL AND (ends_at IS NULL OR ends_at < ?)`,
  accessTokenState: ACCESS_TOKEN_STATE_SQL,
};

export function sqliteGrants(db: Knex): GrantStore {
  const withConnection = withPrepared(db, STATEMENTS);
  const transaction = groupCommit(withConnection);

  return {
    ...knexGrants(db),
    findCodeForExchange: (codeHash) => withConnection((s) => codeWithUserOf(s.codeWithUser.get(codeHash))),
    redeemCode: ({ codeHash, now, grant, refresh }) =>
      transaction((s) => {
        if (s.consumeCode.run(now, codeHash, now).changes !== 1) return false;
        // Named parameters must all be bound: a grant without amr is a password sign-in (X-ID-MFA-5),
        // one without resource has the client as its audience (X-ID-RES-3), one without dpop_jkt is unbound (X-ID-DPOP-4),
        // one without sid gives ID tokens without one (X-ID-LOGOUT-6).
        s.insertGrant.run({
          ...grant,
          amr: grant.amr ?? null,
          resource: grant.resource ?? null,
          dpop_jkt: grant.dpop_jkt ?? null,
          sid: grant.sid ?? null,
        });
        if (refresh) s.insertRefresh.run(refresh);
        return true;
      }),
    findRefreshForRotation: (tokenHash) => withConnection((s) => refreshWithGrantOf(s.refreshWithGrantAndUser.get(tokenHash))),
    rotateRefresh: ({ rowId, parentId, child, sealedAnswer, now, grantEndsAt }) =>
      transaction((s) => {
        if (s.rotate.run(now, child.id, sealedAnswer, rowId).changes !== 1) return false;
        s.insertRefresh.run(child);
        if (parentId) s.forgetAnswer.run(parentId);
        if (grantEndsAt) s.moveGrantEnd.run(grantEndsAt, child.grant_id, grantEndsAt);
        return true;
      }),
    accessTokenState: (q) => withConnection((s) => accessTokenStateOf(s.accessTokenState.get(...accessTokenStateBindings(q)))),
  };
}
