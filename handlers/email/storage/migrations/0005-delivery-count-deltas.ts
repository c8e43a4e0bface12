/**
 * The delivery history's total without counting on PostgreSQL too, so that its cost stays flat as
 * deliveries grow: per-endpoint delta rows appended by triggers and folded, summed by the reader
 * (server/webhooks/storage/migrations/delivery-count-deltas.ts says why not a counter row), filled
 * from the deliveries already there. Also removes the counter an earlier 0004 created on PostgreSQL,
 * if present.
 * SQLite keeps 0004's counter; there this changes nothing.
 */
import type { Migration } from "../../../../server/storage/db.ts";
import { isPostgres } from "../../../../server/storage/dialect.ts";
import { createDeltaCount, dropDeltaCount } from "../../../../server/webhooks/storage/migrations/delivery-count-deltas.ts";

export const deliveryCountDeltas: Migration = {
  async up(db) {
    if (isPostgres(db)) await createDeltaCount(db);
  },
  async down(db) {
    if (isPostgres(db)) await dropDeltaCount(db);
  },
};
