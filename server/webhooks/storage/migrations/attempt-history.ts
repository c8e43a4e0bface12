/**
 * The attempt history at any size (identity's `0004-growth` and `0010-counter-lock-order`): an
 * index whose order is the history's order, so every page is a range of it (../attempt-history.ts),
 * and a per-endpoint counter kept by triggers, so the total is one key lookup.
 */
import type { Knex } from "knex";
import { countFunctionsPostgres, createRowCounter } from "../../../storage/count-triggers.ts";
import { isPostgres } from "../../../storage/dialect.ts";

/** Serves `WHERE endpoint_id = ? ORDER BY attempted_at DESC, attempt_number DESC, id DESC` (read backwards). */
export const HISTORY_INDEX = "webhook_attempts_by_endpoint";
/** The index it replaces: it served the filter but not the order past `attempted_at`, so every page sorted the whole history. */
const OLD_HISTORY_INDEX = "webhook_attempts_history";

/** Attempts per endpoint (the history's total). */
const ATTEMPT_COUNTER = { table: "webhook_attempts", counts: "webhook_attempt_counts", key: "endpoint_id", column: "attempts" };

export async function migrateAttemptHistory(db: Knex): Promise<void> {
  await db.schema.alterTable("webhook_attempts", (t) => t.index(["endpoint_id", "attempted_at", "attempt_number", "id"], HISTORY_INDEX));
  await db.raw(`DROP INDEX ${OLD_HISTORY_INDEX}`);
  await createRowCounter(db, ATTEMPT_COUNTER);
}

/**
 * PostgreSQL: replaces the attempt counter's trigger functions with those that lock the counters in
 * key order (count-triggers.ts), in a database whose counter an older version made. SQLite: nothing.
 */
export async function migrateAttemptCounterLockOrder(db: Knex): Promise<void> {
  if (isPostgres(db)) await countFunctionsPostgres(db, ATTEMPT_COUNTER);
}
