/**
 * The message store on PostgreSQL: the knex implementation, and the outbox's claim, which skips the
 * copies another instance's claim holds (SKIP LOCKED), so instances claim side by side without
 * waiting and never claim the same copy.
 */
import type { Knex } from "knex";
import { knexMessages, type MessageStore } from "../messages.ts";
import { type RecipientRow, recipients } from "../schema.ts";

export function postgresMessages(db: Knex): MessageStore {
  return {
    ...knexMessages(db),
    // One statement (no BEGIN/COMMIT round trips): lease the due copies and return them.
    async claimDue(now, leaseToken, leaseExpiresAt, limit) {
      const due = db<RecipientRow>(recipients.name)
        .select("id")
        .whereNotNull("next_attempt_at")
        .andWhere("next_attempt_at", "<=", now)
        .andWhere((w) => w.whereNull("lease_expires_at").orWhere("lease_expires_at", "<", now))
        .orderBy("next_attempt_at")
        .limit(limit)
        .forUpdate()
        .skipLocked();
      const rows: Record<string, unknown>[] = await db(recipients.name)
        .whereIn("id", due)
        .update({ lease_token: leaseToken, lease_expires_at: leaseExpiresAt, status: "Sent", updated_at: now })
        .returning(recipients.columns);
      return rows.map(recipients.read);
    },
  };
}
