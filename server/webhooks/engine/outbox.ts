/**
 * The engine's outbox writes, made in the caller's transactions (ADR 0004): the event row, one
 * delivery per subscribed endpoint, a manual redelivery, an endpoint's cancellation or deletion.
 * What was committed wakes the dispatcher, so a new delivery does not wait for the poll interval.
 */
import type { Knex } from "knex";
import type { Clock } from "../../clock.ts";
import type { Transactor } from "../../storage/transaction.ts";
import type { DeliveryStore } from "../storage/deliveries.ts";
import type { Trigger } from "../storage/schema.ts";

export interface EnqueueInput {
  /** The delivery id (receivers deduplicate by it). */
  id: string;
  eventId: string;
  endpointId: string;
  eventType: string;
  /** The exact body, sent unchanged on every attempt. */
  body: string;
  /** `event` for deliveries of real events, `test` for test events. */
  trigger: "event" | "test";
  /** Whether failures are retried per the endpoint's policy. */
  autoRetry: boolean;
  /** Sent even if the endpoint is inactive (test events). */
  sendWhenInactive?: boolean;
}

export function createOutbox(options: { queries: DeliveryStore; transaction: Transactor; clock: Clock; wake(): void }) {
  const { queries, transaction, clock, wake } = options;
  const iso = () => clock.now().toISOString();

  /** Wakes the dispatcher once the transaction `trx` belongs to has committed (nothing if it rolls back). */
  function wakeAfterCommit(trx: Knex.Transaction): void {
    let top = trx as Knex.Transaction & { parentTransaction?: Knex.Transaction };
    while (top.parentTransaction) top = top.parentTransaction as typeof top;
    top.executionPromise?.then(
      () => wake(),
      () => {},
    );
  }

  return {
    /** Records the event itself (the outbox row), in the caller's transaction. */
    recordEvent: (trx: Knex.Transaction, event: { id: string; type: string; data: unknown; createdAt: string }) =>
      queries.insertEvent({ id: event.id, type: event.type, data: JSON.stringify(event.data), created_at: event.createdAt }, trx),

    /** Writes deliveries due now in the caller's transaction, and wakes the dispatcher once it commits. */
    async enqueue(trx: Knex.Transaction, deliveries: EnqueueInput[]): Promise<void> {
      const now = iso();
      await queries.insertDeliveries(
        deliveries.map((d) => ({
          id: d.id,
          event_id: d.eventId,
          endpoint_id: d.endpointId,
          event_type: d.eventType,
          body: d.body,
          status: "pending",
          attempts_made: 0,
          next_attempt_at: now,
          next_trigger: d.trigger satisfies Trigger,
          auto_retry: d.autoRetry,
          send_when_inactive: d.sendWhenInactive ?? false,
          lease_token: null,
          lease_expires_at: null,
          created_at: now,
          updated_at: now,
        })),
        trx,
      );
      if (deliveries.length) wakeAfterCommit(trx);
    },

    /** A manual attempt of an existing delivery, due now; undefined when the endpoint has no such delivery. */
    async redeliver(deliveryId: string, endpointId: string) {
      const now = iso();
      const result = await transaction(async (trx) => {
        const row = await queries.findDelivery(deliveryId, endpointId, trx);
        if (!row) return undefined;
        await queries.scheduleManual(deliveryId, now, trx);
        return { deliveryId, eventType: row.event_type, attemptNumber: Number(row.attempts_made) + 1, scheduledAt: now };
      });
      if (result) wake();
      return result;
    },

    /** Cancels an endpoint's pending deliveries (it was deactivated), in the caller's transaction. */
    cancelEndpoint: (trx: Knex.Transaction, endpointId: string) => queries.cancelEndpoint(endpointId, iso(), trx),
    /** Removes an endpoint's deliveries and history (it was deleted), in the caller's transaction. */
    deleteEndpoint: (trx: Knex.Transaction, endpointId: string) => queries.deleteEndpoint(endpointId, trx),
  };
}
