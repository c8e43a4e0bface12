/**
 * The mail outbox store (X-ID-MAIL-1): messages queued in the caller's transaction, claimed under a
 * lease by a dispatcher, and finished by the holder of that lease. Every write after the claim is
 * conditional on the lease token, so a dispatcher whose lease ran out (and whose message another
 * one claimed) changes nothing. The claim here is portable and safe on SQLite, where one writer
 * runs at a time; PostgreSQL's skips rows another instance is claiming (postgres/mail-outbox.ts).
 */
import type { Knex } from "knex";
import type { Tx } from "../../../server/storage/transaction.ts";
import { type MailOutboxRow, mailOutbox } from "./schema.ts";

export type { MailOutboxRow };

/** What a finished attempt writes. */
export interface MailOutcome {
  attempts: number;
  lastError: string | null;
}

export interface MailOutboxStore {
  /** Queues a message in the caller's transaction. */
  insert(row: MailOutboxRow, tx: Tx): Promise<void>;
  /** Runs `then` once the transaction `tx` belongs to has committed; never when it rolls back. */
  onCommit(tx: Tx, then: () => void): void;
  /** Leases up to `limit` pending rows due by `now` (and not under a live lease) to `leaseToken` until `leaseExpiresAt`. */
  claimDue(now: string, leaseToken: string, leaseExpiresAt: string, limit: number): Promise<MailOutboxRow[]>;
  /** Marks a leased row sent; its bodies are cleared unless `keepBodies`. False when the lease is no longer held. */
  markSent(id: string, leaseToken: string, at: string, outcome: MailOutcome, keepBodies: boolean): Promise<boolean>;
  /** Gives a leased row up for good (its attempts are spent, or the receiver refused it for good). */
  markFailed(id: string, leaseToken: string, at: string, outcome: MailOutcome): Promise<boolean>;
  /** Ends the lease and makes the row due again at `nextAttemptAt`. */
  reschedule(id: string, leaseToken: string, nextAttemptAt: string, outcome: MailOutcome): Promise<boolean>;
  /** Gives leases back unattempted: the rows are due at once for any dispatcher. */
  release(ids: string[], leaseToken: string): Promise<void>;
  /** The newest messages first (the local mailbox). */
  newest(limit: number): Promise<MailOutboxRow[]>;
  find(id: string): Promise<MailOutboxRow | undefined>;
}

/** The rows a claim may take: pending, due, and under no live lease. */
export function dueRows(q: Knex.QueryBuilder, now: string): Knex.QueryBuilder {
  return q
    .where("status", "pending")
    .whereNotNull("next_attempt_at")
    .andWhere("next_attempt_at", "<=", now)
    .andWhere((w) => w.whereNull("lease_expires_at").orWhere("lease_expires_at", "<", now));
}

export function knexMailOutbox(db: Knex): MailOutboxStore {
  const leased = (id: string, leaseToken: string) =>
    db<MailOutboxRow>(mailOutbox.name).where({ id, lease_token: leaseToken, status: "pending" });
  const ended = { lease_token: null, lease_expires_at: null };
  return {
    async insert(row, tx) {
      await tx(mailOutbox.name).insert(row);
    },
    onCommit(tx, then) {
      let top = tx as Tx & { parentTransaction?: Tx };
      while (top.parentTransaction) top = top.parentTransaction as typeof top;
      top.executionPromise?.then(then, () => {});
    },
    async claimDue(now, leaseToken, leaseExpiresAt, limit) {
      const due = dueRows(db(mailOutbox.name).select("id"), now).orderBy("next_attempt_at").limit(limit);
      // The outer conditions again: the row must still be claimable when the update reaches it.
      const rows: Record<string, unknown>[] = await dueRows(db(mailOutbox.name).whereIn("id", due), now)
        .update({ lease_token: leaseToken, lease_expires_at: leaseExpiresAt })
        .returning(mailOutbox.columns as string[]);
      return rows.map(mailOutbox.read);
    },
    async markSent(id, leaseToken, at, outcome, keepBodies) {
      const bodies = keepBodies ? {} : { text_body: null, html_body: null };
      const changed = await leased(id, leaseToken).update({
        ...ended,
        ...bodies,
        status: "sent",
        next_attempt_at: null,
        finished_at: at,
        attempts: outcome.attempts,
        last_error: outcome.lastError,
      });
      return changed > 0;
    },
    async markFailed(id, leaseToken, at, outcome) {
      const changed = await leased(id, leaseToken).update({
        ...ended,
        status: "failed",
        next_attempt_at: null,
        finished_at: at,
        attempts: outcome.attempts,
        last_error: outcome.lastError,
      });
      return changed > 0;
    },
    async reschedule(id, leaseToken, nextAttemptAt, outcome) {
      const changed = await leased(id, leaseToken).update({
        ...ended,
        next_attempt_at: nextAttemptAt,
        attempts: outcome.attempts,
        last_error: outcome.lastError,
      });
      return changed > 0;
    },
    async release(ids, leaseToken) {
      if (!ids.length) return;
      await db(mailOutbox.name).whereIn("id", ids).andWhere({ lease_token: leaseToken }).update(ended);
    },
    newest: (limit) =>
      db<MailOutboxRow>(mailOutbox.name)
        .select(mailOutbox.columns)
        .orderBy([
          { column: "created_at", order: "desc" },
          { column: "id", order: "desc" },
        ])
        .limit(limit)
        .then((rows) => rows.map((r) => mailOutbox.read(r as unknown as Record<string, unknown>))),
    find: (id) =>
      db<MailOutboxRow>(mailOutbox.name)
        .select(mailOutbox.columns)
        .where({ id })
        .first()
        .then((r) => (r ? mailOutbox.read(r as unknown as Record<string, unknown>) : undefined)),
  };
}
