/**
 * The webhook attempt counter's trigger functions on PostgreSQL lock the counters in key order
 * (server/storage/count-triggers.ts): the delete's UPDATE found them by scanning the counts table,
 * so a retention batch over many endpoints' attempts and a record batch over two of them could
 * each hold a counter the other waited for (PostgreSQL aborted one: a lost record batch, its
 * deliveries sent again). Replaces the functions 0004 made; SQLite's triggers are unchanged.
 */
import type { Migration } from "../../../../server/storage/db.ts";
import { migrateAttemptCounterLockOrder } from "../../../../server/webhooks/storage/migrations/attempt-history.ts";

export const counterLockOrder: Migration = {
  up: migrateAttemptCounterLockOrder,
  // The functions count the same as those they replaced: nothing to undo.
  async down() {},
};
