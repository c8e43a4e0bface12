/**
 * Deliveries as records with their attempts (email's delivery history shows one row per delivery,
 * identity's one per attempt): newest first, keyset-paged by (created_at, id) so a deep page costs
 * what the first does. The unfiltered total costs the same at 10³ and 10⁶ deliveries: on SQLite it
 * is a per-endpoint counter kept by triggers (`migrateDeliveryCounts`); on PostgreSQL the sum of a
 * few per-endpoint delta rows (delivery-count-deltas.ts), because there a counter row locked by
 * every transaction that enqueues a delivery deadlocked the email service's outbox transactions
 * (test/email-crash.test.ts with two dispatching processes caught it).
 */
import type { Knex } from "knex";
import { createRowCounter } from "../storage/count-triggers.ts";
import { deltaTotal } from "./delivery-count-deltas.ts";
import type { AttemptRow, DeliveryRow } from "./store.ts";

/** Deliveries per endpoint (the history's total without a status filter). */
const DELIVERY_COUNTER = { table: "webhook_deliveries", counts: "webhook_delivery_counts", key: "endpoint_id", column: "deliveries" };

const isPostgres = (db: Knex) => db.client.config.client === "pg";

/** Adds the per-endpoint delivery counter on SQLite (from a service's migration; counts what is there already). */
export const migrateDeliveryCounts = async (db: Knex): Promise<void> => {
  if (!isPostgres(db)) await createRowCounter(db, DELIVERY_COUNTER);
};

export interface DeliveryRecord {
  delivery: DeliveryRow;
  attempts: AttemptRow[];
}

export function createDeliveryRecords(db: Knex) {
  async function withAttempts(rows: DeliveryRow[]): Promise<DeliveryRecord[]> {
    if (!rows.length) return [];
    const attempts = (await db<AttemptRow>("webhook_attempts")
      .whereIn(
        "delivery_id",
        rows.map((r) => r.id),
      )
      .orderBy([{ column: "attempt_number" }, { column: "attempted_at" }])) as AttemptRow[];
    const byDelivery = new Map<string, AttemptRow[]>();
    for (const a of attempts) byDelivery.set(a.delivery_id, [...(byDelivery.get(a.delivery_id) ?? []), a]);
    return rows.map((delivery) => ({ delivery, attempts: byDelivery.get(delivery.id) ?? [] }));
  }

  return {
    /** An endpoint's deliveries, newest first, after the (createdAt, id) cursor if given. */
    async list(endpointId: string, options: { limit: number; offset?: number; status?: string | undefined }) {
      const q = db<DeliveryRow>("webhook_deliveries").where({ endpoint_id: endpointId });
      if (options.status) q.andWhere("status", options.status);
      // Filtered by status, the count walks the endpoint's rows (a filter clients use on recent failures).
      const total = options.status
        ? q.clone().clearSelect().count({ n: "*" }).first()
        : isPostgres(db)
          ? deltaTotal(db, endpointId)
          : db(DELIVERY_COUNTER.counts).where({ endpoint_id: endpointId }).first({ n: DELIVERY_COUNTER.column });
      const rows = (await q
        .orderBy([
          { column: "created_at", order: "desc" },
          { column: "id", order: "desc" },
        ])
        .limit(options.limit)
        .offset(options.offset ?? 0)) as DeliveryRow[];
      const counted = (await total) as { n: number | string } | undefined;
      return { items: await withAttempts(rows), totalCount: Number(counted?.n ?? 0) };
    },

    async get(endpointId: string, deliveryId: string): Promise<DeliveryRecord | undefined> {
      const row = (await db<DeliveryRow>("webhook_deliveries").where({ id: deliveryId, endpoint_id: endpointId }).first()) as
        | DeliveryRow
        | undefined;
      return row ? (await withAttempts([row]))[0] : undefined;
    },
  };
}
