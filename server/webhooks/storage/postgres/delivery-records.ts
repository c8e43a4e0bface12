/**
 * Delivery records on PostgreSQL: the unfiltered total is the sum of the endpoint's delta rows,
 * which the triggers of ../migrations/delivery-count-deltas.ts append and fold (it says why).
 */
import type { Knex } from "knex";
import type { Tx } from "../../../storage/transaction.ts";
import { type DeliveryRecords, knexDeliveryRecords } from "../delivery-records.ts";
import { type DeliveryCountDeltaRow, webhookDeliveryCountDeltas } from "../schema.ts";

/** The endpoint's total: the sum of its deltas (one statement, so one snapshot). */
export async function deltaTotal(db: Knex, endpointId: string): Promise<number> {
  const row = await db<DeliveryCountDeltaRow>(webhookDeliveryCountDeltas.name).where({ endpoint_id: endpointId }).sum({ n: "n" }).first();
  return Number(row?.n ?? 0);
}

/** Folds the endpoint's delta rows into one, in `trx` (never waits). The triggers fold on their own; for tests. */
export const foldDeltas = (trx: Knex | Tx, endpointId: string) => trx.raw("SELECT webhook_delivery_count_fold(?)", [endpointId]);

export function postgresDeliveryRecords(db: Knex): DeliveryRecords {
  return knexDeliveryRecords(db, (endpointId) => deltaTotal(db, endpointId));
}
