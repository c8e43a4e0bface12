/**
 * Deliveries as records with their attempts (email's delivery history shows one row per delivery,
 * identity's one per attempt: attempt-history.ts): newest first, with the endpoint's total.
 *
 * The unfiltered total is kept per endpoint so that it costs the same at 10³ and 10⁶ deliveries, in
 * a different way on each database: sqlite/delivery-records.ts reads a counter kept by triggers;
 * postgres/delivery-records.ts sums a few delta rows, because there a counter row locked by every
 * transaction that enqueues a delivery deadlocked the email service's outbox transactions
 * (migrations/delivery-count-deltas.ts). `knexDeliveryRecords` takes that total as an operation.
 */
import type { Knex } from "knex";
import { countRows } from "../../storage/db.ts";
import { type AttemptRow, type DeliveryRow, webhookAttempts, webhookDeliveries } from "./schema.ts";

export interface DeliveryRecord {
  delivery: DeliveryRow;
  attempts: AttemptRow[];
}

export interface DeliveryRecords {
  /** An endpoint's deliveries with their attempts, newest first, and how many there are (with `status`, of that status). */
  list(
    endpointId: string,
    options: { limit: number; offset?: number; status?: string | undefined },
  ): Promise<{ items: DeliveryRecord[]; totalCount: number }>;
  get(endpointId: string, deliveryId: string): Promise<DeliveryRecord | undefined>;
}

/** The number of deliveries an endpoint has. */
export type DeliveryTotal = (endpointId: string) => Promise<number>;

/** `total`: the unfiltered total, as the database keeps it. */
export function knexDeliveryRecords(db: Knex, total: DeliveryTotal): DeliveryRecords {
  const deliveries = () => db<DeliveryRow>(webhookDeliveries.name);

  async function withAttempts(rows: DeliveryRow[]): Promise<DeliveryRecord[]> {
    if (!rows.length) return [];
    const attempts = await db<AttemptRow>(webhookAttempts.name)
      .whereIn(
        "delivery_id",
        rows.map((r) => r.id),
      )
      .orderBy([{ column: "attempt_number" }, { column: "attempted_at" }]);
    const byDelivery = new Map<string, AttemptRow[]>();
    for (const a of attempts) byDelivery.set(a.delivery_id, [...(byDelivery.get(a.delivery_id) ?? []), a]);
    return rows.map((delivery) => ({ delivery, attempts: byDelivery.get(delivery.id) ?? [] }));
  }

  return {
    async list(endpointId, options) {
      const q = deliveries().where({ endpoint_id: endpointId });
      if (options.status) q.andWhere("status", options.status);
      // Filtered by status, the count walks the endpoint's rows (a filter clients use on recent failures).
      const counted = options.status ? countRows(q) : total(endpointId);
      const rows = await q
        .orderBy([
          { column: "created_at", order: "desc" },
          { column: "id", order: "desc" },
        ])
        .limit(options.limit)
        .offset(options.offset ?? 0);
      return { items: await withAttempts(rows), totalCount: await counted };
    },

    async get(endpointId, deliveryId) {
      const row = await deliveries().where({ id: deliveryId, endpoint_id: endpointId }).first();
      return row ? (await withAttempts([row]))[0] : undefined;
    },
  };
}
