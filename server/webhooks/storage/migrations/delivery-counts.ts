/**
 * SQLite: the delivery history's total without counting (email's `0004-delivery-counts`), a
 * per-endpoint counter of deliveries kept by triggers. PostgreSQL keeps a sum of deltas instead
 * (delivery-count-deltas.ts says why).
 */
import type { Knex } from "knex";
import { createRowCounter } from "../../../storage/count-triggers.ts";
import { isPostgres } from "../../../storage/dialect.ts";

/** Deliveries per endpoint (the history's total without a status filter). */
const DELIVERY_COUNTER = { table: "webhook_deliveries", counts: "webhook_delivery_counts", key: "endpoint_id", column: "deliveries" };

/** Adds the per-endpoint delivery counter on SQLite (from a service's migration; counts what is there already). */
export const migrateDeliveryCounts = async (db: Knex): Promise<void> => {
  if (!isPostgres(db)) await createRowCounter(db, DELIVERY_COUNTER);
};
