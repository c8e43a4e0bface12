/** Named queries over the suppression list, keyed by the normalised address. */
import type { Knex } from "knex";
import { pageNewestFirst } from "../../../server/storage/db.ts";
import { isSqlite, withPrepared } from "../../../server/storage/sqlite-prepared.ts";

type Database = Knex | Knex.Transaction;

export type SuppressionReason = "hard_bounce" | "complaint" | "manual";

export interface SuppressionRow {
  address_key: string;
  address: string;
  reason: SuppressionReason;
  email_id: string | null;
  detail: string | null;
  created_at: string;
}

export function createSuppressionQueries(db: Knex) {
  // SQLite: the check of one address, at every acceptance and before every attempt, prepared once.
  const one = isSqlite(db) ? withPrepared(db, { find: "SELECT * FROM suppressions WHERE address_key = ?" }) : undefined;
  return {
    /** Inserts unless the address has an entry; true when inserted (safe under concurrency). */
    insertIfAbsent: async (row: SuppressionRow, trx: Database = db): Promise<boolean> =>
      ((await trx("suppressions").insert(row).onConflict("address_key").ignore().returning("address_key")) as unknown[]).length > 0,
    among: (keys: string[]) =>
      one && keys.length === 1
        ? one((s) => s.find.all(keys[0]) as unknown as SuppressionRow[])
        : (db<SuppressionRow>("suppressions").whereIn("address_key", keys) as Promise<SuppressionRow[]>),
    find: (key: string) => db<SuppressionRow>("suppressions").where({ address_key: key }).first() as Promise<SuppressionRow | undefined>,
    /** Newest first, optionally one reason. */
    async list(reason: SuppressionReason | undefined, page: number, pageSize: number) {
      const q = db<SuppressionRow>("suppressions");
      if (reason) q.where("reason", reason);
      return pageNewestFirst<SuppressionRow>(q, page, pageSize, "address_key");
    },
    delete: (key: string) => db("suppressions").where({ address_key: key }).delete(),
  };
}

export type SuppressionQueries = ReturnType<typeof createSuppressionQueries>;
