/** Delivery records on SQLite: the unfiltered total is the endpoint's counter, kept by triggers (../migrations/delivery-counts.ts). */
import type { Knex } from "knex";
import { type DeliveryRecords, knexDeliveryRecords } from "../delivery-records.ts";
import { type DeliveryCountRow, webhookDeliveryCounts } from "../schema.ts";

export function sqliteDeliveryRecords(db: Knex): DeliveryRecords {
  return knexDeliveryRecords(db, async (endpointId) => {
    const row = await db<DeliveryCountRow>(webhookDeliveryCounts.name).where({ endpoint_id: endpointId }).first("deliveries");
    return Number(row?.deliveries ?? 0);
  });
}
