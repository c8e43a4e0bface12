/**
 * The outbox: events, one delivery per (event, endpoint), and the attempts the dispatcher writes.
 * What the delivery engine (../engine.ts) calls: a service writes its change, the event and its
 * deliveries in one transaction; a dispatcher claims due deliveries under a lease and records one
 * attempt per try.
 *
 * `knexDeliveries` is every operation but the dispatcher's claim and record, the same SQL on both
 * databases. The claim and the record are written per database: sqlite/deliveries.ts (prepared
 * statements, on a thread of their own) and postgres/deliveries.ts (named statements, `SKIP
 * LOCKED`, and the lock order of several rows); storage/index.ts picks one of them once.
 */
import type { Knex } from "knex";
import { insertChunked } from "../../storage/db.ts";
import type { Tx } from "../../storage/transaction.ts";
import {
  type AttemptRow,
  type ClaimedRow,
  type DeliveryRow,
  type DeliveryStatus,
  type EventRow,
  type Trigger,
  webhookAttempts,
  webhookDeliveries,
  webhookEvents,
} from "./schema.ts";

/** The outcome of one attempt, written by `recordAttempts`. */
export interface AttemptWrite {
  leaseToken: string;
  attempt: AttemptRow;
  delivery: { status: DeliveryStatus; attemptsMade: number; nextAttemptAt: string | null; nextTrigger: Trigger };
}

export interface DeliveryStore {
  /** The outbox row of an event, in the transaction that records the change. */
  insertEvent(row: EventRow, trx?: Tx): Promise<void>;
  insertDeliveries(rows: DeliveryRow[], trx?: Tx): Promise<void>;

  /**
   * Reserves up to `limit` due deliveries for the lease: pending, due, and not leased (or leased
   * by a dispatcher whose lease ran out: it died or hung). Concurrent dispatchers (other
   * instances) take disjoint rows without waiting for each other.
   */
  claimDue(now: string, leaseExpiresAt: string, leaseToken: string, limit: number): Promise<ClaimedRow[]>;

  /**
   * Writes many attempts at once (one transaction, one fsync for a batch). A delivery's state
   * changes only if the writer still holds its lease; an attempt whose delivery was cancelled or
   * re-leased meanwhile is still recorded (it happened), without a next attempt, and one whose
   * delivery was deleted with its endpoint is dropped. A lease token is only ever held by a pending
   * delivery (every other change clears it), so the token alone is the condition.
   */
  recordAttempts(writes: AttemptWrite[], at: string): Promise<void>;

  /** Gives claimed deliveries back at once (graceful shutdown), if still ours; the number given back. */
  releaseLeases(ids: string[], leaseToken: string): Promise<number>;
  /** Final state without an attempt (the endpoint is gone or inactive), if still ours. */
  cancelClaimed(id: string, leaseToken: string, at: string): Promise<number>;

  findDelivery(id: string, endpointId: string, trx?: Tx): Promise<DeliveryRow | undefined>;
  /** Makes a delivery due now as a manual attempt without automatic retries (any state). */
  scheduleManual(id: string, now: string, trx?: Tx): Promise<number>;
  /** Stops every pending delivery of an endpoint (deactivated or deleted), and the next attempts its history shows. */
  cancelEndpoint(endpointId: string, now: string, trx?: Tx): Promise<void>;
  /** Removes an endpoint's deliveries and attempts (it was deleted). */
  deleteEndpoint(endpointId: string, trx?: Tx): Promise<void>;

  /** Releases what the dispatcher holds besides the pool (SQLite: the dispatch thread; a later call starts another). */
  close(): Promise<void>;
}

/** The operations whose SQL is the same on both databases. */
export type PortableDeliveryOperations = Omit<DeliveryStore, "claimDue" | "recordAttempts">;

export function knexDeliveries(db: Knex): PortableDeliveryOperations {
  const deliveries = (trx?: Tx) => (trx ?? db)<DeliveryRow>(webhookDeliveries.name);
  const attempts = (trx?: Tx) => (trx ?? db)<AttemptRow>(webhookAttempts.name);
  return {
    insertEvent: async (row, trx) => {
      await (trx ?? db)<EventRow>(webhookEvents.name).insert(row);
    },
    insertDeliveries: (rows, trx) => insertChunked(trx ?? db, webhookDeliveries.name, rows),

    releaseLeases: async (ids, leaseToken) => {
      if (!ids.length) return 0;
      return deliveries().whereIn("id", ids).andWhere({ lease_token: leaseToken }).update({ lease_token: null, lease_expires_at: null });
    },

    cancelClaimed: (id, leaseToken, at) =>
      deliveries()
        .where({ id, lease_token: leaseToken })
        .update({ status: "cancelled", next_attempt_at: null, lease_token: null, lease_expires_at: null, updated_at: at }),

    findDelivery: (id, endpointId, trx) => deliveries(trx).where({ id, endpoint_id: endpointId }).first(),

    scheduleManual: (id, now, trx) =>
      deliveries(trx).where({ id }).update({
        status: "pending",
        next_attempt_at: now,
        next_trigger: "manual",
        auto_retry: false,
        lease_token: null,
        lease_expires_at: null,
        updated_at: now,
      }),

    cancelEndpoint: async (endpointId, now, trx) => {
      await deliveries(trx)
        .where({ endpoint_id: endpointId, status: "pending" })
        .andWhereNot({ send_when_inactive: true })
        .update({ status: "cancelled", next_attempt_at: null, lease_token: null, lease_expires_at: null, updated_at: now });
      await attempts(trx).where({ endpoint_id: endpointId }).whereNotNull("next_attempt_at").update({ next_attempt_at: null });
    },

    deleteEndpoint: async (endpointId, trx) => {
      await attempts(trx).where({ endpoint_id: endpointId }).delete();
      await deliveries(trx).where({ endpoint_id: endpointId }).delete();
    },

    close: async () => {},
  };
}

/**
 * The queue as its metrics see it: pending deliveries and the earliest `next_attempt_at` among
 * them. One statement over the `(status, next_attempt_at)` index: the count walks only pending
 * entries, the minimum is the first of them.
 */
export async function pendingDeliveries(db: Knex): Promise<{ depth: number; earliestDueAt: string | null }> {
  const row = await db<DeliveryRow>(webhookDeliveries.name)
    .where({ status: "pending" })
    .count({ depth: "*" })
    .min({ earliest: "next_attempt_at" })
    .first();
  return { depth: Number(row?.depth ?? 0), earliestDueAt: row?.earliest ?? null };
}
