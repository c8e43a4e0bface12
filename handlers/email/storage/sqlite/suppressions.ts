/**
 * The suppression store on SQLite: the check of one address, at every acceptance, and the check
 * of a copy before each of its attempts (its message's mode read in the same statement), prepared
 * once.
 */
import type { Knex } from "knex";
import { withPrepared } from "../../../../server/storage/sqlite/statements.ts";
import { emails, suppressions } from "../schema.ts";
import { knexSuppressions, type SuppressionStore } from "../suppressions.ts";

export const SUPPRESSION_STATEMENTS = {
  find: `SELECT ${suppressions.list()} FROM ${suppressions.name} WHERE test_mode = ? AND address_key = ?`,
  ofCopy:
    `SELECT ${suppressions.list("s")} FROM ${suppressions.name} s ` +
    `WHERE s.test_mode = (SELECT e.test_mode FROM ${emails.name} e WHERE e.id = ?) AND s.address_key = ?`,
} as const;

/** better-sqlite3 binds numbers, not booleans. */
const bit = (v: boolean) => (v ? 1 : 0);

export function sqliteSuppressions(db: Knex): SuppressionStore {
  const withConnection = withPrepared(db, SUPPRESSION_STATEMENTS);
  const knex = knexSuppressions(db);
  return {
    ...knex,
    among: (testMode, keys) =>
      keys.length === 1 ? withConnection((s) => s.find.all(bit(testMode), keys[0]).map(suppressions.read)) : knex.among(testMode, keys),
    ofCopy: (emailId, key) =>
      withConnection((s) => {
        const row = s.ofCopy.get(emailId, key);
        return row && suppressions.read(row);
      }),
  };
}
