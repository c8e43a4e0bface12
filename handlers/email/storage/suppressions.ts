/**
 * The suppression store: one list per mode (X-EM-27), keyed by `(test_mode, address_key)`: the
 * mode, then the normalised address. The interface and its portable knex implementation;
 * sqlite/suppressions.ts prepares the checks of every acceptance and of every attempt, and
 * storage/index.ts picks one once.
 */
import type { Knex } from "knex";
import { pageNewestFirst } from "../../../server/storage/db.ts";
import type { Tx } from "../../../server/storage/transaction.ts";
import { emails, type SuppressionReason, type SuppressionRow, suppressions } from "./schema.ts";

export type { SuppressionReason, SuppressionRow } from "./schema.ts";

export interface SuppressionStore {
  /** Inserts unless the address has an entry on that list; true when inserted (safe under concurrency). */
  insertIfAbsent(row: SuppressionRow, tx?: Tx): Promise<boolean>;
  /** The entries of one list among these normalised addresses. */
  among(testMode: boolean, keys: string[]): Promise<SuppressionRow[]>;
  /** The entry that suppresses a copy of message `emailId` to `key`: on the list of the message's mode. */
  ofCopy(emailId: string, key: string): Promise<SuppressionRow | undefined>;
  find(testMode: boolean, key: string): Promise<SuppressionRow | undefined>;
  /** One list, newest first, optionally one reason. */
  list(
    testMode: boolean,
    reason: SuppressionReason | undefined,
    page: number,
    pageSize: number,
  ): Promise<{ items: SuppressionRow[]; totalCount: number }>;
  delete(testMode: boolean, key: string): Promise<void>;
}

export function knexSuppressions(db: Knex): SuppressionStore {
  return {
    insertIfAbsent: async (row, tx) =>
      (await (tx ?? db)(suppressions.name).insert(row).onConflict(["test_mode", "address_key"]).ignore().returning("address_key")).length >
      0,
    among: (testMode, keys) => db<SuppressionRow>(suppressions.name).where("test_mode", testMode).whereIn("address_key", keys),
    ofCopy: (emailId, key) =>
      db<SuppressionRow>(suppressions.name)
        .where("test_mode", db(emails.name).select("test_mode").where("id", emailId))
        .andWhere("address_key", key)
        .first(),
    find: (testMode, key) => db<SuppressionRow>(suppressions.name).where({ test_mode: testMode, address_key: key }).first(),
    list(testMode, reason, page, pageSize) {
      const q = db<SuppressionRow>(suppressions.name).where("test_mode", testMode);
      if (reason) q.where("reason", reason);
      return pageNewestFirst<SuppressionRow>(q, page, pageSize, "address_key");
    },
    async delete(testMode, key) {
      await db(suppressions.name).where({ test_mode: testMode, address_key: key }).delete();
    },
  };
}
