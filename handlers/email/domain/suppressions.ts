/**
 * The suppression list (EM-8, EM-9): addresses never mailed again. Hard bounces and complaints add
 * entries automatically, in the same transaction as the status change that caused them; an entry
 * keeps its first reason. Complaint entries are lifted only on purpose (`force`), because mailing
 * someone who reported spam again is what burns a sender's reputation.
 */
import type { Knex } from "knex";
import type { Clock } from "../../../server/clock.ts";
import { HttpProblem, notFound } from "../../../server/http/problem.ts";
import { countRows } from "../../../server/storage/db.ts";
import { addressKey } from "./addresses.ts";

type Db = Knex | Knex.Transaction;

export type SuppressionReason = "hard_bounce" | "complaint" | "manual";

export interface SuppressionRow {
  address_key: string;
  address: string;
  reason: SuppressionReason;
  email_id: string | null;
  detail: string | null;
  created_at: string;
}

export function createSuppressions(db: Knex, clock: Clock) {
  /** Adds an entry unless the address has one; true when it was added. Safe under concurrency. */
  async function add(trx: Db, entry: { address: string; reason: SuppressionReason; emailId?: string | null; detail?: string | null }): Promise<boolean> {
    const inserted = await trx("suppressions")
      .insert({
        address_key: addressKey(entry.address),
        address: entry.address,
        reason: entry.reason,
        email_id: entry.emailId ?? null,
        detail: entry.detail ?? null,
        created_at: clock.now().toISOString(),
      })
      .onConflict("address_key")
      .ignore()
      .returning("address_key");
    return (inserted as unknown[]).length > 0;
  }

  return {
    add,

    /** The entries among these addresses, by normalised key. */
    async among(addresses: string[], trx: Db = db): Promise<Map<string, SuppressionRow>> {
      if (!addresses.length) return new Map();
      const rows = (await trx<SuppressionRow>("suppressions").whereIn("address_key", [...new Set(addresses.map(addressKey))])) as SuppressionRow[];
      return new Map(rows.map((r) => [r.address_key, r]));
    },

    find: (address: string) => db<SuppressionRow>("suppressions").where({ address_key: addressKey(address) }).first() as Promise<SuppressionRow | undefined>,

    /** Newest first, optionally one reason. */
    async list(reason: SuppressionReason | undefined, page: number, pageSize: number) {
      const q = db<SuppressionRow>("suppressions");
      if (reason) q.where({ reason });
      const items = (await q.clone().orderBy([{ column: "created_at", order: "desc" }, { column: "address_key", order: "desc" }]).limit(pageSize).offset((page - 1) * pageSize)) as SuppressionRow[];
      return { items, totalCount: await countRows(q) };
    },

    /** By hand: the new entry and true, or the existing one unchanged and false. */
    async addManual(address: string): Promise<{ row: SuppressionRow; created: boolean }> {
      const created = await add(db, { address, reason: "manual" });
      const row = (await db<SuppressionRow>("suppressions").where({ address_key: addressKey(address) }).first()) as SuppressionRow;
      return { row, created };
    },

    async remove(address: string, force: boolean): Promise<void> {
      const row = (await db<SuppressionRow>("suppressions").where({ address_key: addressKey(address) }).first()) as SuppressionRow | undefined;
      if (!row) throw notFound("This address is not suppressed.");
      if (row.reason === "complaint" && !force) {
        throw new HttpProblem(422, "complaint_not_removable", "This recipient reported a message as spam. Lift the suppression only with their consent, and with ?force=true.");
      }
      await db("suppressions").where({ address_key: row.address_key }).delete();
    },
  };
}

export type Suppressions = ReturnType<typeof createSuppressions>;
