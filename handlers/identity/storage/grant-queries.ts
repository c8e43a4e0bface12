/**
 * The token endpoint's storage (the hot path, issue 3 "Speed"): each grant is one read and one
 * short write transaction, as four named operations.
 *
 * Two implementations of the same four operations:
 * - SQLite: statements prepared once (server/storage/sqlite-prepared.ts), the writes group-committed
 *   (one fsync for the exchanges that arrive together, each answered only after it is durable).
 * - PostgreSQL: named prepared statements (server/storage/pg-prepared.ts), one round trip each:
 *   a read is one join, and a write transaction is one statement whose data-modifying CTEs insert
 *   and update only when its first, the conditional UPDATE, changed a row. One statement is one
 *   transaction, committed (and, with synchronous_commit on, flushed) before it answers.
 * Both keep the single-use rule the same way: the conditional UPDATE decides which caller wins
 * (on PostgreSQL a concurrent one waits for the winner's row lock, then finds the row used).
 */
import type { Knex } from "knex";
import { isSqlite } from "../../../server/storage/dialect.ts";
import { pgPrepared } from "../../../server/storage/postgres/statements.ts";
import { groupCommit } from "../../../server/storage/sqlite/group-commit.ts";
import { withPrepared } from "../../../server/storage/sqlite/statements.ts";
import type { UserRow } from "./core-queries.ts";
import type { CodeRow, GrantRow, RefreshRow } from "./oauth-queries.ts";

export interface GrantQueries {
  /** The code (by hash) and the user it was issued to (undefined if deleted since). */
  findCodeForExchange(codeHash: string): Promise<{ code: CodeRow; user: UserRow | undefined } | undefined>;
  /**
   * Consumes the code if it is unused and unexpired at `now`, then stores its grant and the first
   * refresh token (if any), in one transaction. False when another exchange won (nothing stored).
   */
  redeemCode(o: { codeHash: string; now: string; grant: GrantRow; refresh: RefreshRow | undefined }): Promise<boolean>;
  /** The refresh token (by hash), its grant and the grant's user. */
  findRefreshForRotation(
    tokenHash: string,
  ): Promise<{ row: RefreshRow; grant: GrantRow | undefined; user: UserRow | undefined } | undefined>;
  /**
   * Marks `rowId` used (storing the sealed answer for the grace window) if it was unused, stores
   * its successor and forgets the parent's answer, in one transaction; and moves the grant's end
   * to `grantEndsAt` when given (the successor outlives it). False when another won.
   */
  rotateRefresh(o: {
    rowId: string;
    parentId: string | null;
    child: RefreshRow;
    sealedAnswer: string;
    now: string;
    grantEndsAt?: string | undefined;
  }): Promise<boolean>;
}

export function createGrantQueries(db: Knex): GrantQueries {
  return isSqlite(db) ? sqliteQueries(db) : postgresQueries(db);
}

const CODE_COLUMNS = [
  "code_hash",
  "grant_id",
  "application_id",
  "user_id",
  "redirect_uri",
  "scopes",
  "code_challenge",
  "code_challenge_method",
  "nonce",
  "auth_time",
  "created_at",
  "expires_at",
  "consumed_at",
] as const;
const USER_COLUMNS = ["id", "email", "password_hash", "first_name", "last_name", "email_verified", "created_at", "updated_at"] as const;
const GRANT_COLUMNS = ["id", "application_id", "user_id", "scopes", "auth_time", "created_at", "revoked_at", "ends_at"] as const;
const REFRESH_COLUMNS = [
  "id",
  "token_hash",
  "grant_id",
  "parent_id",
  "created_at",
  "expires_at",
  "used_at",
  "child_id",
  "rotation_answer",
] as const;

/** `c.code_hash AS c__code_hash, …`: one row carries several tables without name clashes. */
const select = (alias: string, columns: readonly string[]) => columns.map((c) => `${alias}.${c} AS ${alias}__${c}`).join(", ");
/** The columns of one alias out of a joined row; undefined when a LEFT JOIN found nothing. */
function pick<T>(row: Record<string, unknown>, alias: string, columns: readonly string[], key: string): T | undefined {
  if (row[`${alias}__${key}`] === null || row[`${alias}__${key}`] === undefined) return undefined;
  return Object.fromEntries(columns.map((c) => [c, row[`${alias}__${c}`]])) as T;
}
const insert = (table: string, columns: readonly string[]) =>
  `INSERT INTO ${table} (${columns.join(", ")}) VALUES (${columns.map((c) => `@${c}`).join(", ")})`;

// `= +?` in the joins: prepared once, not re-prepared on every run (see sqlite-prepared.ts).
const SQL = {
  codeWithUser: `SELECT ${select("c", CODE_COLUMNS)}, ${select("u", USER_COLUMNS)} FROM oauth_codes c LEFT JOIN users u ON u.id = c.user_id WHERE c.code_hash = +?`,
  consumeCode: "UPDATE oauth_codes SET consumed_at = ? WHERE code_hash = ? AND consumed_at IS NULL AND expires_at > ?",
  insertGrant: insert("oauth_grants", GRANT_COLUMNS),
  insertRefresh: insert("oauth_refresh_tokens", REFRESH_COLUMNS),
  refreshWithGrantAndUser:
    `SELECT ${select("r", REFRESH_COLUMNS)}, ${select("g", GRANT_COLUMNS)}, ${select("u", USER_COLUMNS)} FROM oauth_refresh_tokens r ` +
    "LEFT JOIN oauth_grants g ON g.id = r.grant_id LEFT JOIN users u ON u.id = g.user_id WHERE r.token_hash = +?",
  rotate: "UPDATE oauth_refresh_tokens SET used_at = ?, child_id = ?, rotation_answer = ? WHERE id = ? AND used_at IS NULL",
  forgetAnswer: "UPDATE oauth_refresh_tokens SET rotation_answer = NULL WHERE id = ?",
  moveGrantEnd: "UPDATE oauth_grants SET ends_at = ? WHERE id = ? AND revoked_at IS NULL AND (ends_at IS NULL OR ends_at < ?)",
} as const;

function sqliteQueries(db: Knex): GrantQueries {
  const withConnection = withPrepared(db, SQL);
  const transaction = groupCommit(withConnection);

  return {
    findCodeForExchange: (codeHash) =>
      withConnection((s) => {
        const row = s.codeWithUser.get(codeHash);
        const code = row && pick<CodeRow>(row, "c", CODE_COLUMNS, "code_hash");
        return code ? { code, user: pick<UserRow>(row, "u", USER_COLUMNS, "id") } : undefined;
      }),
    redeemCode: ({ codeHash, now, grant, refresh }) =>
      transaction((s) => {
        if (s.consumeCode.run(now, codeHash, now).changes !== 1) return false;
        s.insertGrant.run(grant);
        if (refresh) s.insertRefresh.run(refresh);
        return true;
      }),
    findRefreshForRotation: (tokenHash) =>
      withConnection((s) => {
        const joined = s.refreshWithGrantAndUser.get(tokenHash);
        const row = joined && pick<RefreshRow>(joined, "r", REFRESH_COLUMNS, "id");
        return row
          ? { row, grant: pick<GrantRow>(joined, "g", GRANT_COLUMNS, "id"), user: pick<UserRow>(joined, "u", USER_COLUMNS, "id") }
          : undefined;
      }),
    rotateRefresh: ({ rowId, parentId, child, sealedAnswer, now, grantEndsAt }) =>
      transaction((s) => {
        if (s.rotate.run(now, child.id, sealedAnswer, rowId).changes !== 1) return false;
        s.insertRefresh.run(child);
        if (parentId) s.forgetAnswer.run(parentId);
        if (grantEndsAt) s.moveGrantEnd.run(grantEndsAt, child.grant_id, grantEndsAt);
        return true;
      }),
  };
}

/** `$first, $first+1, …` for `columns`. */
const params = (columns: readonly string[], first: number) => columns.map((_, i) => `$${first + i}`).join(", ");
const values = <T>(row: T, columns: readonly (keyof T & string)[]) => columns.map((c) => row[c] ?? null);

// The joins of the SQLite statements, with PostgreSQL's parameters; the writes as one statement each.
const PG_SQL = {
  codeWithUser: SQL.codeWithUser.replace("= +?", "= $1"),
  refreshWithGrantAndUser: SQL.refreshWithGrantAndUser.replace("= +?", "= $1"),
  // $1 now, $2 code hash, then the grant's columns, whether a refresh token is stored, and its columns.
  redeemCode: `WITH consumed AS (
      UPDATE oauth_codes SET consumed_at = $1 WHERE code_hash = $2 AND consumed_at IS NULL AND expires_at > $1 RETURNING code_hash
    ), new_grant AS (
      INSERT INTO oauth_grants (${GRANT_COLUMNS.join(", ")}) SELECT ${params(GRANT_COLUMNS, 3)} FROM consumed RETURNING id
    ), new_refresh AS (
      INSERT INTO oauth_refresh_tokens (${REFRESH_COLUMNS.join(", ")})
      SELECT ${params(REFRESH_COLUMNS, 4 + GRANT_COLUMNS.length)} FROM consumed, new_grant WHERE $${3 + GRANT_COLUMNS.length}::boolean RETURNING id
    )
    SELECT count(*)::int AS won FROM consumed`,
  // $1 now, $2 the used token's id, $3 its sealed answer, $4 its parent (or NULL), $5 the grant's new end (or NULL),
  // then the child's columns from $6, the first being its id (REFRESH_COLUMNS starts with `id`).
  rotateRefresh: `WITH rotated AS (
      UPDATE oauth_refresh_tokens SET used_at = $1, child_id = $6, rotation_answer = $3 WHERE id = $2 AND used_at IS NULL RETURNING grant_id
    ), child AS (
      INSERT INTO oauth_refresh_tokens (${REFRESH_COLUMNS.join(", ")}) SELECT ${params(REFRESH_COLUMNS, 6)} FROM rotated RETURNING id
    ), forgotten AS (
      UPDATE oauth_refresh_tokens SET rotation_answer = NULL WHERE id = $4 AND EXISTS (SELECT 1 FROM rotated) RETURNING id
    ), moved AS (
      UPDATE oauth_grants g SET ends_at = $5 FROM rotated
       WHERE $5::text IS NOT NULL AND g.id = rotated.grant_id AND g.revoked_at IS NULL AND (g.ends_at IS NULL OR g.ends_at < $5) RETURNING g.id
    )
    SELECT count(*)::int AS won FROM rotated`,
} as const;

function postgresQueries(db: Knex): GrantQueries {
  const run = pgPrepared(db, "grants", PG_SQL);
  const noRefresh = REFRESH_COLUMNS.map(() => null);
  return {
    async findCodeForExchange(codeHash) {
      const [row] = await run("codeWithUser", [codeHash]);
      const code = row && pick<CodeRow>(row, "c", CODE_COLUMNS, "code_hash");
      return code ? { code, user: pick<UserRow>(row, "u", USER_COLUMNS, "id") } : undefined;
    },
    async redeemCode({ codeHash, now, grant, refresh }) {
      const refreshValues = refresh ? values(refresh, REFRESH_COLUMNS) : noRefresh;
      const [row] = await run("redeemCode", [now, codeHash, ...values(grant, GRANT_COLUMNS), refresh !== undefined, ...refreshValues]);
      return row?.won === 1;
    },
    async findRefreshForRotation(tokenHash) {
      const [joined] = await run("refreshWithGrantAndUser", [tokenHash]);
      const row = joined && pick<RefreshRow>(joined, "r", REFRESH_COLUMNS, "id");
      return row
        ? { row, grant: pick<GrantRow>(joined, "g", GRANT_COLUMNS, "id"), user: pick<UserRow>(joined, "u", USER_COLUMNS, "id") }
        : undefined;
    },
    async rotateRefresh({ rowId, parentId, child, sealedAnswer, now, grantEndsAt }) {
      const [row] = await run("rotateRefresh", [
        now,
        rowId,
        sealedAnswer,
        parentId,
        grantEndsAt ?? null,
        ...values(child, REFRESH_COLUMNS),
      ]);
      return row?.won === 1;
    },
  };
}
