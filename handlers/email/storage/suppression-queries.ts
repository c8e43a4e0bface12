/**
 * Named queries over the suppression lists, one per mode (X-EM-27), keyed by `(test_mode,
 * address_key)`: the mode, then the normalised address.
 */
import type { Knex } from "knex";
import { pageNewestFirst } from "../../../server/storage/db.ts";
import { isSqlite } from "../../../server/storage/dialect.ts";
import { withPrepared } from "../../../server/storage/sqlite/statements.ts";

type Database = Knex | Knex.Transaction;

export type SuppressionReason = "hard_bounce" | "complaint" | "manual";

export interface SuppressionRow {
  /** The list the entry is on: test (true) or live (false). */
  test_mode: boolean | number;
  address_key: string;
  address: string;
  reason: SuppressionReason;
  email_id: string | null;
  detail: string | null;
  created_at: string;
}

/** better-sqlite3 binds numbers, not booleans. */
const bit = (v: boolean) => (v ? 1 : 0);

/**
 * SQLite: the check of one address, at every acceptance, and the check of a copy before each of
 * its attempts, prepared once. The copy's reads its message's mode in the same statement (two
 * tables: `= +?`, server/storage/sqlite/statements.ts).
 */
export const SUPPRESSION_STATEMENTS = {
  find: "SELECT * FROM suppressions WHERE test_mode = ? AND address_key = ?",
  ofCopy: "SELECT s.* FROM suppressions s WHERE s.test_mode = (SELECT e.test_mode FROM emails e WHERE e.id = +?) AND s.address_key = +?",
} as const;

export function createSuppressionQueries(db: Knex) {
  const one = isSqlite(db) ? withPrepared(db, SUPPRESSION_STATEMENTS) : undefined;
  return {
    /** Inserts unless the address has an entry on that list; true when inserted (safe under concurrency). */
    insertIfAbsent: async (row: SuppressionRow, trx: Database = db): Promise<boolean> =>
      ((await trx("suppressions").insert(row).onConflict(["test_mode", "address_key"]).ignore().returning("address_key")) as unknown[])
        .length > 0,
    among: (testMode: boolean, keys: string[]) =>
      one && keys.length === 1
        ? one((s) => s.find.all(bit(testMode), keys[0]) as unknown as SuppressionRow[])
        : (db<SuppressionRow>("suppressions").where("test_mode", testMode).whereIn("address_key", keys) as Promise<SuppressionRow[]>),
    /** The entry that suppresses a copy of message `emailId` to `key`: on the list of the message's mode. */
    ofCopy: (emailId: string, key: string) =>
      one
        ? one((s) => s.ofCopy.get(emailId, key) as SuppressionRow | undefined)
        : (db<SuppressionRow>("suppressions")
            .where("test_mode", db("emails").select("test_mode").where("id", emailId))
            .andWhere("address_key", key)
            .first() as Promise<SuppressionRow | undefined>),
    find: (testMode: boolean, key: string) =>
      db<SuppressionRow>("suppressions").where({ test_mode: testMode, address_key: key }).first() as Promise<SuppressionRow | undefined>,
    /** One list, newest first, optionally one reason. */
    async list(testMode: boolean, reason: SuppressionReason | undefined, page: number, pageSize: number) {
      const q = db<SuppressionRow>("suppressions").where("test_mode", testMode);
      if (reason) q.where("reason", reason);
      return pageNewestFirst<SuppressionRow>(q, page, pageSize, "address_key");
    },
    delete: (testMode: boolean, key: string) => db("suppressions").where({ test_mode: testMode, address_key: key }).delete(),
  };
}

export type SuppressionQueries = ReturnType<typeof createSuppressionQueries>;
