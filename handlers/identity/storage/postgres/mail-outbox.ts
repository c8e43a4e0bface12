/**
 * PostgreSQL's mail outbox: the claim skips the rows another instance's claim is locking (SKIP
 * LOCKED), so that dispatchers of several instances on one database take different messages at
 * once instead of queueing behind each other. Everything else is the portable store's.
 */
import type { Knex } from "knex";
import { dueRows, knexMailOutbox, type MailOutboxStore } from "../mail-outbox.ts";
import { mailOutbox } from "../schema.ts";

export function postgresMailOutbox(db: Knex): MailOutboxStore {
  return {
    ...knexMailOutbox(db),
    // One statement: lease the due rows no other claim holds, and return them.
    async claimDue(now, leaseToken, leaseExpiresAt, limit) {
      const due = dueRows(db(mailOutbox.name).select("id"), now).orderBy("next_attempt_at").limit(limit).forUpdate().skipLocked();
      const rows: Record<string, unknown>[] = await db(mailOutbox.name)
        .whereIn("id", due)
        .update({ lease_token: leaseToken, lease_expires_at: leaseExpiresAt })
        .returning(mailOutbox.columns as string[]);
      return rows.map(mailOutbox.read);
    },
  };
}
