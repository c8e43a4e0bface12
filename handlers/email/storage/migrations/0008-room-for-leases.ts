/**
 * PostgreSQL: `webhook_deliveries` keeps half of each page free for the new versions of its rows, so
 * that a dispatcher's claim (the lease columns, in no index) is a HOT update, on the same page and in
 * no index (server/webhooks/storage/migrations/room-for-leases.ts). Nothing on SQLite. Safe on a live
 * database: no rewrite, a lock that lets reads and writes go on; pages written from then on keep
 * the room.
 */
import type { Migration } from "../../../../server/storage/db.ts";
import { fillDeliveryPages, leaveRoomForLeases } from "../../../../server/webhooks/storage/migrations/room-for-leases.ts";

export const roomForLeases: Migration = { up: leaveRoomForLeases, down: fillDeliveryPages };
