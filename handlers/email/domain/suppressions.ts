/**
 * The suppression list (EM-8, EM-9): addresses never mailed again. Hard bounces and complaints add
 * entries automatically, in the same transaction as the status change that caused them; an entry
 * keeps its first reason. Complaint entries are lifted only on purpose (`force`), because mailing
 * someone who reported spam again is what burns a sender's reputation.
 *
 * Live and test keep one list each (X-EM-27): an entry is on the list of the message that caused
 * it, or of the key that added it by hand, and suppresses sends of that mode only. Test copies
 * never leave the simulator, so a live entry protects nobody in test mode; and a test key, which
 * reads and changes only the test list, can never lift a live complaint nor stop live mail.
 */
import type { Tx } from "../../../server/storage/transaction.ts";
import type { Clock } from "../../../server/clock.ts";
import { notFound, refused } from "../../../server/domain/errors.ts";
import type { SuppressionReason, SuppressionRow, SuppressionStore } from "../storage/suppressions.ts";
import { addressKey } from "./addresses.ts";

export type { SuppressionReason, SuppressionRow };

export function createSuppressions(queries: SuppressionStore, clock: Clock) {
  /** Adds an entry unless the address has one (in the caller's transaction, or on its own without one); true when it was added. */
  const add = (
    trx: Tx | undefined,
    entry: { test: boolean; address: string; reason: SuppressionReason; emailId?: string | null; detail?: string | null },
  ): Promise<boolean> =>
    queries.insertIfAbsent(
      {
        test_mode: entry.test,
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

    /** The entries of one mode's list among these addresses, by normalised key. */
    async among(test: boolean, addresses: string[]): Promise<Map<string, SuppressionRow>> {
      if (!addresses.length) return new Map();
      const rows = await queries.among(test, [...new Set(addresses.map(addressKey))]);
      return new Map(rows.map((r) => [r.address_key, r]));
    },

    /** The entry that suppresses this copy: on the list of its message's mode. */
    ofCopy: (copy: { email_id: string; address: string }) => queries.ofCopy(copy.email_id, addressKey(copy.address)),

    find: (test: boolean, address: string) => queries.find(test, addressKey(address)),

    /** One mode's list, newest first, optionally one reason. */
    list: (test: boolean, reason: SuppressionReason | undefined, page: number, pageSize: number) =>
      queries.list(test, reason, page, pageSize),

    /** By hand, on one mode's list: the new entry and true, or the existing one unchanged and false. */
    async addManual(test: boolean, address: string): Promise<{ row: SuppressionRow; created: boolean }> {
      const created = await add(undefined, { test, address, reason: "manual" });
      const row = (await queries.find(test, addressKey(address))) as SuppressionRow;
      return { row, created };
    },

    /** Lifts an entry of one mode's list: another mode's entry is not there (404), force or not. */
    async remove(test: boolean, address: string, force: boolean): Promise<void> {
      const row = await queries.find(test, addressKey(address));
      if (!row) throw notFound("This address is not suppressed.");
      if (row.reason === "complaint" && !force) {
        throw refused(
          "complaint_not_removable",
          "This recipient reported a message as spam. Lift the suppression only with their consent, and with ?force=true.",
        );
      }
      await queries.delete(test, row.address_key);
    },
  };
}

export type Suppressions = ReturnType<typeof createSuppressions>;
