/**
 * PostgreSQL: room on each `webhook_deliveries` page for the new versions of its rows (the
 * services' `room-for-leases` migrations; nothing on SQLite).
 */
import type { Knex } from "knex";
import { isPostgres } from "../../../storage/dialect.ts";

/**
 * The share of each `webhook_deliveries` page filled by inserts (fillfactor), the rest kept for
 * the new versions of its rows. A claim changes only the lease columns, which no index holds, so
 * when the page has room PostgreSQL writes the new version beside the old one as a HOT update: no
 * entry in any of the table's indexes, and WAL for the changed bytes alone (not the body again). A
 * claim takes rows in insertion order, whole pages of them, so a page needs room for a second
 * version of every row on it: half. The record's update changes the due index's columns and is
 * never HOT, but it can go on the same page once the claim's old versions are pruned. What it saves
 * the claim is measured in bench/results/2026-11-27-webhooks.md.
 */
export const DELIVERIES_FILLFACTOR = 50;

/**
 * Sets `DELIVERIES_FILLFACTOR` on `webhook_deliveries` (a service's migration; nothing on SQLite).
 * Safe on a live database: a brief lock that lets reads and writes go on, nothing rewritten; pages
 * written from then on keep the room.
 */
export async function leaveRoomForLeases(db: Knex): Promise<void> {
  if (isPostgres(db)) await db.raw(`ALTER TABLE webhook_deliveries SET (fillfactor = ${DELIVERIES_FILLFACTOR})`);
}

/** Undoes `leaveRoomForLeases`. */
export async function fillDeliveryPages(db: Knex): Promise<void> {
  if (isPostgres(db)) await db.raw("ALTER TABLE webhook_deliveries RESET (fillfactor)");
}
