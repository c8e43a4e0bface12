/**
 * The delivery history's unfiltered total on PostgreSQL (email's `0005-delivery-count-deltas`),
 * at a cost that stays flat as deliveries grow, without a counter row that enqueueing transactions
 * share. A counter row updated by triggers (SQLite's, count-triggers.ts) is locked by every
 * transaction that enqueues a delivery for its endpoint until it commits, and the email service's
 * outbox transactions, which also lock copies and messages, deadlocked on it
 * (test/email/crash.test.ts, two dispatching processes).
 *
 * Here the count is a sum of deltas. `webhook_delivery_count_deltas (endpoint_id, n)` has no unique
 * key: a statement-level trigger on `webhook_deliveries` appends one row per endpoint per INSERT
 * (+rows) or DELETE (-rows) statement. An append never conflicts with another, so no enqueueing
 * transaction waits for any other; the total is `sum(n)` over the endpoint's rows, exact in every
 * snapshot because each delta commits with the rows it counts.
 *
 * A fold (`webhook_delivery_count_fold(endpoint)`) keeps the rows per endpoint few: it locks the
 * endpoint's committed delta rows `FOR UPDATE SKIP LOCKED`, deletes them and appends their sum
 * (nothing when it is 0), in the caller's transaction. It never waits: rows another fold holds are
 * skipped and left for a later fold, rows of transactions still open are not in its snapshot, and
 * deltas committed after it started are neither deleted nor summed. Two concurrent folds take
 * disjoint rows, and a reader sees a fold either entirely or not at all, so every sum stays exact.
 *
 * When folds run: the trigger itself folds the endpoints of its statement, every DELETE statement
 * (deletions are rarer than enqueues: an endpoint's deletion, a retention batch; an endpoint
 * deleted with its deliveries leaves no delta rows) and an INSERT statement with probability
 * 1/FOLD_ONE_IN per endpoint, so an endpoint keeps about FOLD_ONE_IN rows whatever its rate, read
 * or not, and the read sums tens of rows at 10⁶ deliveries. Chosen over the alternatives: a fold
 * by the reader writes on the read path and leaves an endpoint nobody reads growing a row per
 * enqueue (its first read would then sum them all); a fold by a timer or the dispatcher needs a
 * process to own it, and a busy endpoint still grows by its rate times the period between folds.
 * Folding inside an outbox transaction is safe because a fold never waits for a lock; it holds
 * the rows it folded until that transaction ends, and concurrent folds skip them.
 *
 * SQLite keeps its counter row (one writer at a time, nothing to deadlock: delivery-counts.ts).
 * The reads, the sum and the fold, are the store's (../postgres/delivery-records.ts).
 */
import type { Knex } from "knex";

export const DELTAS = "webhook_delivery_count_deltas";

/** An INSERT statement folds each of its endpoints with probability 1/FOLD_ONE_IN. */
export const FOLD_ONE_IN = 32;

/**
 * Creates the deltas table, the fold and the triggers on PostgreSQL, and counts the deliveries
 * already there. The triggers and the count run in the migration's transaction: CREATE TRIGGER
 * locks `webhook_deliveries` against writes until it commits, so no delivery is counted twice or
 * missed. It also removes the counter that migration 0004 briefly created on PostgreSQL (the one
 * that deadlocked), wherever a database still has it.
 */
export async function createDeltaCount(db: Knex): Promise<void> {
  await db.raw("DROP TRIGGER IF EXISTS webhook_deliveries_count_insert ON webhook_deliveries");
  await db.raw("DROP TRIGGER IF EXISTS webhook_deliveries_count_delete ON webhook_deliveries");
  await db.raw("DROP FUNCTION IF EXISTS webhook_deliveries_count_insert(), webhook_deliveries_count_delete()");
  await db.schema.dropTableIfExists("webhook_delivery_counts");

  await db.schema.createTable(DELTAS, (t) => {
    t.string("endpoint_id", 36).notNullable();
    t.bigInteger("n").notNullable();
    t.index(["endpoint_id"], `${DELTAS}_by_endpoint`);
  });
  await db.raw(`CREATE FUNCTION webhook_delivery_count_fold(endpoint text) RETURNS void LANGUAGE plpgsql
    SET search_path FROM CURRENT AS $$
    DECLARE
      held tid[];
    BEGIN
      -- A row another fold holds is skipped, never waited for; a held row cannot move.
      held := ARRAY(SELECT ctid FROM ${DELTAS} WHERE endpoint_id = endpoint FOR UPDATE SKIP LOCKED);
      IF cardinality(held) < 2 THEN RETURN; END IF;
      WITH gone AS (DELETE FROM ${DELTAS} WHERE ctid = ANY (held) RETURNING n)
      INSERT INTO ${DELTAS} (endpoint_id, n) SELECT endpoint, sum(n) FROM gone HAVING sum(n) <> 0;
    END $$`);
  await db.raw(`CREATE FUNCTION webhook_deliveries_count_delta_insert() RETURNS trigger LANGUAGE plpgsql
    SET search_path FROM CURRENT AS $$
    DECLARE
      endpoint text;
    BEGIN
      FOR endpoint IN
        INSERT INTO ${DELTAS} (endpoint_id, n) SELECT endpoint_id, count(*) FROM new_rows GROUP BY endpoint_id RETURNING endpoint_id
      LOOP
        IF random() < 1.0 / ${FOLD_ONE_IN} THEN PERFORM webhook_delivery_count_fold(endpoint); END IF;
      END LOOP;
      RETURN NULL;
    END $$`);
  await db.raw(`CREATE FUNCTION webhook_deliveries_count_delta_delete() RETURNS trigger LANGUAGE plpgsql
    SET search_path FROM CURRENT AS $$
    DECLARE
      endpoint text;
    BEGIN
      FOR endpoint IN
        INSERT INTO ${DELTAS} (endpoint_id, n) SELECT endpoint_id, -count(*) FROM old_rows GROUP BY endpoint_id RETURNING endpoint_id
      LOOP
        PERFORM webhook_delivery_count_fold(endpoint);
      END LOOP;
      RETURN NULL;
    END $$`);
  await db.raw(`CREATE FUNCTION webhook_deliveries_count_delta_truncate() RETURNS trigger LANGUAGE plpgsql
    SET search_path FROM CURRENT AS $$
    BEGIN
      TRUNCATE ${DELTAS};
      RETURN NULL;
    END $$`);
  await db.raw(`CREATE TRIGGER webhook_deliveries_count_delta_insert AFTER INSERT ON webhook_deliveries
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION webhook_deliveries_count_delta_insert()`);
  await db.raw(`CREATE TRIGGER webhook_deliveries_count_delta_delete AFTER DELETE ON webhook_deliveries
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION webhook_deliveries_count_delta_delete()`);
  await db.raw(`CREATE TRIGGER webhook_deliveries_count_delta_truncate AFTER TRUNCATE ON webhook_deliveries
    FOR EACH STATEMENT EXECUTE FUNCTION webhook_deliveries_count_delta_truncate()`);
  await db.raw(`INSERT INTO ${DELTAS} (endpoint_id, n) SELECT endpoint_id, count(*) FROM webhook_deliveries GROUP BY endpoint_id`);
}

export async function dropDeltaCount(db: Knex): Promise<void> {
  for (const op of ["insert", "delete", "truncate"]) {
    await db.raw(`DROP TRIGGER IF EXISTS webhook_deliveries_count_delta_${op} ON webhook_deliveries`);
    await db.raw(`DROP FUNCTION IF EXISTS webhook_deliveries_count_delta_${op}()`);
  }
  await db.raw("DROP FUNCTION IF EXISTS webhook_delivery_count_fold(text)");
  await db.schema.dropTableIfExists(DELTAS);
}
