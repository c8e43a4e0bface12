/**
 * The grants store on PostgreSQL: the token endpoint's reads and writes as named prepared
 * statements (server/storage/postgres/statements.ts), one round trip each: a read is one join, and
 * a write transaction is one statement whose data-modifying CTEs insert and update only when its
 * first, the conditional UPDATE, changed a row. One statement is one transaction, committed (and,
 * with synchronous_commit on, flushed) before it answers. A concurrent caller waits for the
 * winner's row lock, then finds the row used.
 */
import type { Knex } from "knex";
import { batchedSql, pgBatchedRead } from "../../../../server/storage/postgres/batched-reads.ts";
import { pgPrepared } from "../../../../server/storage/postgres/statements.ts";
import { codeWithUserOf, type GrantStore, knexGrants, refreshWithGrantOf } from "../grants.ts";
import { codes, grants, refreshTokens, users } from "../schema.ts";

const GRANT_COLUMNS = grants.columns.length;

const STATEMENTS = {
  // The two reads are batched: the callers of one turn share one statement (batched-reads.ts).
  codeWithUser: batchedSql(
    ["code_hash"],
    (p) =>
      `SELECT ${codes.select("c")}, ${users.select("u")} FROM ${codes.name} c LEFT JOIN ${users.name} u ON u.id = c.user_id WHERE c.code_hash = ${p("code_hash")}`,
  ),
  refreshWithGrantAndUser: batchedSql(
    ["token_hash"],
    (p) =>
      `SELECT ${refreshTokens.select("r")}, ${grants.select("g")}, ${users.select("u")} FROM ${refreshTokens.name} r ` +
      `LEFT JOIN ${grants.name} g ON g.id = r.grant_id LEFT JOIN ${users.name} u ON u.id = g.user_id WHERE r.token_hash = ${p("token_hash")}`,
  ),
  // $1 now, $2 code hash, then the grant's columns, whether a refresh token is stored, and its columns.
  redeemCode: `WITH consumed AS (
      UPDATE ${codes.name} SET consumed_at = $1 WHERE code_hash = $2 AND consumed_at IS NULL AND expires_at > $1 RETURNING code_hash
    ), new_grant AS (
      INSERT INTO ${grants.name} (${grants.list()}) SELECT ${grants.parameters(3)} FROM consumed RETURNING id
    ), new_refresh AS (
      INSERT INTO ${refreshTokens.name} (${refreshTokens.list()})
      SELECT ${refreshTokens.parameters(4 + GRANT_COLUMNS)} FROM consumed, new_grant WHERE $${3 + GRANT_COLUMNS}::boolean RETURNING id
    )
    SELECT count(*)::int AS won FROM consumed`,
  // $1 now, $2 the used token's id, $3 its sealed answer, $4 its parent (or NULL), $5 the grant's new end (or NULL),
  // then the child's columns from $6, the first being its id (the table's key).
  rotateRefresh: `WITH rotated AS (
      UPDATE ${refreshTokens.name} SET used_at = $1, child_id = $6, rotation_answer = $3 WHERE id = $2 AND used_at IS NULL RETURNING grant_id
    ), child AS (
      INSERT INTO ${refreshTokens.name} (${refreshTokens.list()}) SELECT ${refreshTokens.parameters(6)} FROM rotated RETURNING id
    ), forgotten AS (
      UPDATE ${refreshTokens.name} SET rotation_answer = NULL WHERE id = $4 AND EXISTS (SELECT 1 FROM rotated) RETURNING id
    ), moved AS (
      UPDATE ${grants.name} g SET ends_at = $5 FROM rotated
       WHERE $5::text IS NOT NULL AND g.id = rotated.grant_id AND g.revoked_at IS NULL AND (g.ends_at IS NULL OR g.ends_at < $5) RETURNING g.id
    )
    SELECT count(*)::int AS won FROM rotated`,
};

if (refreshTokens.columns[0] !== "id")
  throw new Error("rotateRefresh binds the child's id as $6: oauth_refresh_tokens' first column must be id");

export function postgresGrants(db: Knex): GrantStore {
  const run = pgPrepared(db, "grants", STATEMENTS);
  const noRefresh = refreshTokens.columns.map(() => null);
  const codeWithUser = pgBatchedRead(run, "codeWithUser");
  const refreshWithGrantAndUser = pgBatchedRead(run, "refreshWithGrantAndUser");
  return {
    ...knexGrants(db),
    findCodeForExchange: async (codeHash) => codeWithUserOf((await codeWithUser([codeHash]))[0]),
    async redeemCode({ codeHash, now, grant, refresh }) {
      const refreshValues = refresh ? refreshTokens.values(refresh) : noRefresh;
      const [row] = await run("redeemCode", [now, codeHash, ...grants.values(grant), refresh !== undefined, ...refreshValues]);
      return row?.won === 1;
    },
    findRefreshForRotation: async (tokenHash) => refreshWithGrantOf((await refreshWithGrantAndUser([tokenHash]))[0]),
    async rotateRefresh({ rowId, parentId, child, sealedAnswer, now, grantEndsAt }) {
      const [row] = await run("rotateRefresh", [now, rowId, sealedAnswer, parentId, grantEndsAt ?? null, ...refreshTokens.values(child)]);
      return row?.won === 1;
    },
  };
}
