/**
 * The suppression list (EM-8, EM-9): addresses never mailed again. Hard bounces and complaints add
 * entries automatically, in the same transaction as the status change that caused them; an entry
 * keeps its first reason. Complaint entries are lifted only on purpose (`force`), because mailing
 * someone who reported spam again is what burns a sender's reputation.
 */
import type { Tx } from "../../../server/storage/transaction.ts";
import type { Clock } from "../../../server/clock.ts";
import { notFound, refused } from "../../../server/domain/errors.ts";
import type { SuppressionQueries, SuppressionReason, SuppressionRow } from "../storage/suppression-queries.ts";
import { addressKey } from "./addresses.ts";

export type { SuppressionReason, SuppressionRow };

export function createSuppressions(queries: SuppressionQueries, clock: Clock) {
  /** Adds an entry unless the address has one (in the caller's transaction, or on its own without one); true when it was added. */
  const add = (
    trx: Tx | undefined,
    entry: { address: string; reason: SuppressionReason; emailId?: string | null; detail?: string | null },
  ): Promise<boolean> =>
    queries.insertIfAbsent(
      {
        address_key: addressKey(entry.address),
        address: entry.address,
        reason: entry.reason,
        email_id: entry.emailId ?? null,
        detail: entry.detail ?? null,
        created_at: clock.now().toISOString(),
      },
      trx,
    );

  return {
    add,

    /** The entries among these addresses, by normalised key. */
    async among(addresses: string[]): Promise<Map<string, SuppressionRow>> {
      if (!addresses.length) return new Map();
      const rows = await queries.among([...new Set(addresses.map(addressKey))]);
      return new Map(rows.map((r) => [r.address_key, r]));
    },

    find: (address: string) => queries.find(addressKey(address)),

    /** Newest first, optionally one reason. */
    list: (reason: SuppressionReason | undefined, page: number, pageSize: number) => queries.list(reason, page, pageSize),

    /** By hand: the new entry and true, or the existing one unchanged and false. */
    async addManual(address: string): Promise<{ row: SuppressionRow; created: boolean }> {
      const created = await add(undefined, { address, reason: "manual" });
      const row = (await queries.find(addressKey(address))) as SuppressionRow;
      return { row, created };
    },

    async remove(address: string, force: boolean): Promise<void> {
      const row = await queries.find(addressKey(address));
      if (!row) throw notFound("This address is not suppressed.");
      if (row.reason === "complaint" && !force) {
        throw refused(
          "complaint_not_removable",
          "This recipient reported a message as spam. Lift the suppression only with their consent, and with ?force=true.",
        );
      }
      await queries.delete(row.address_key);
    },
  };
}

export type Suppressions = ReturnType<typeof createSuppressions>;
