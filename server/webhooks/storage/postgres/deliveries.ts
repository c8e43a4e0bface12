/**
 * The outbox on PostgreSQL: the portable operations (../deliveries.ts), with the dispatcher's claim
 * and record as named prepared statements (server/storage/postgres/statements.ts: parsed once per
 * connection, sent as Bind/Execute, no query build), and every writer of several delivery rows
 * taking their locks in key order.
 *
 * DELIVERY_LOCK_ORDER. Every statement that may wait for the locks of several delivery rows takes
 * them in key order (`id`), before it changes any: the record batch (RECORD), an endpoint's
 * deactivation and deletion, and giving leases back. Two transactions that lock overlapping rows
 * in different orders can each hold a row the other waits for, and PostgreSQL then aborts one
 * (40P01); in one order, the later waits for the earlier. A plan's own order is no order: a bitmap
 * scan visits rows as they lie in the table, a join as its outer side comes. The writers that take
 * no part: the claim never waits (SKIP LOCKED), a manual redelivery and a cancelled claim change
 * one row and hold nothing else, new deliveries are new rows, and the retention purge skips what
 * another transaction holds (server/storage/retention.ts). A writer of both tables locks
 * deliveries before attempts (test/webhooks/lock-order.test.ts).
 */
import type { Knex } from "knex";
import { pgPrepared } from "../../../storage/postgres/statements.ts";
import { type DeliveryRow, claimedDeliveries, webhookAttempts, webhookDeliveries } from "../schema.ts";
import { type AttemptWrite, type DeliveryStore, knexDeliveries } from "../deliveries.ts";

const deliveries = webhookDeliveries.name;

/**
 * Reserves up to $4 due deliveries (due at $3) for lease $1 until $2. `FOR UPDATE SKIP LOCKED`:
 * concurrent dispatchers take disjoint rows without waiting for each other.
 *
 * The claim walks the due index, `(status, next_attempt_at)`, in order and stops after the limit.
 * With statistics that show few pending deliveries (the usual state, and a queue's statistics lag
 * behind a backlog), the planner would rather fetch every due row through a bitmap and sort them
 * all, so every claim of a backlog of n would cost O(n)
 * (bench/results/2026-11-26-webhooks-postgres-claim.md). Sorting is switched off for the claim
 * alone (SET LOCAL, its own transaction), which leaves the index's order as the only way. It
 * commits like any other transaction (synchronous_commit as the server has it).
 */
const CLAIM = `UPDATE ${deliveries} d SET lease_token = $1, lease_expires_at = $2
       FROM (SELECT id FROM ${deliveries}
              WHERE status = 'pending' AND next_attempt_at <= $3 AND (lease_expires_at IS NULL OR lease_expires_at <= $3)
              ORDER BY next_attempt_at LIMIT $4 FOR UPDATE SKIP LOCKED) c
      WHERE d.id = c.id
  RETURNING ${claimedDeliveries.list("d")}`;

/** The attempt columns PostgreSQL reads from the batch's JSON as integers; the rest are text. */
const INTEGER_COLUMNS = new Set<string>(["attempt_number", "status_code", "success", "duration_ms"] satisfies Array<
  (typeof webhookAttempts.columns)[number]
>);

/**
 * A batch of outcomes in one statement, one round trip, with the whole batch as one JSON parameter
 * ($1; $2 the time of the write): hundreds of bound values cost more to build and parse than to
 * run. The UPDATE changes only the deliveries whose lease the writer still holds; every attempt is
 * inserted, without its next attempt when the lease was lost, unless its delivery was deleted with
 * its endpoint. One statement is atomic.
 *
 * Lock order (DELIVERY_LOCK_ORDER above): `l` first locks the batch's deliveries in key order, and
 * the UPDATE then changes rows it already holds. Left to the UPDATE, the rows were locked in the
 * join's order, the batch's (the order its attempts ended), and an endpoint's deletion or
 * deactivation, which locks the same rows in its own plan's order, deadlocked with it. `l` holds
 * every delivery of the batch that still exists, leased to the writer or not, so an attempt is
 * kept exactly when its delivery is (an EXISTS read the statement's snapshot, and kept the
 * attempts of a delivery deleted while the statement waited for it). `l` reads the batch's keys as
 * an array from the primary key's index, in its order: no scan of the table, no sort beyond the
 * batch (test/webhooks/lock-order.test.ts checks the plan).
 */
export const RECORD = (() => {
  const columns = webhookAttempts.columns;
  const types = columns.map((c) => `${c} ${INTEGER_COLUMNS.has(c) ? "integer" : "text"}`).join(", ");
  const values = columns
    .map((c) =>
      c === "success"
        ? "(w.success = 1)"
        : c === "next_attempt_at"
          ? "CASE WHEN u.id IS NULL THEN NULL ELSE w.next_attempt_at END"
          : `w.${c}`,
    )
    .join(", ");
  return `WITH w AS (
        SELECT * FROM json_to_recordset($1::json)
          AS w(${types}, lease_token text, status text, attempts_made integer, delivery_next_attempt_at text, next_trigger text)
      ), l AS MATERIALIZED (
        SELECT id FROM ${deliveries} WHERE id = ANY (ARRAY(SELECT delivery_id FROM w)) ORDER BY id FOR NO KEY UPDATE
      ), u AS (
        UPDATE ${deliveries} d SET status = w.status, attempts_made = w.attempts_made, next_attempt_at = w.delivery_next_attempt_at,
               next_trigger = w.next_trigger, lease_token = NULL, lease_expires_at = NULL, updated_at = $2
          FROM w WHERE d.id = ANY (ARRAY(SELECT id FROM l)) AND d.id = w.delivery_id AND d.lease_token = w.lease_token
        RETURNING d.id
      )
      INSERT INTO ${webhookAttempts.name} (${webhookAttempts.list()})
      SELECT ${values} FROM w LEFT JOIN u ON u.id = w.delivery_id WHERE w.delivery_id IN (SELECT id FROM l)`;
})();

/** One element of RECORD's JSON: the attempt's columns and its delivery's new state. */
const recordElement = ({ leaseToken, attempt, delivery }: AttemptWrite) => ({
  ...attempt,
  success: attempt.success ? 1 : 0,
  lease_token: leaseToken,
  status: delivery.status,
  // attempts_made is the attempt's number: the lease kept anyone else from changing it.
  attempts_made: delivery.attemptsMade,
  delivery_next_attempt_at: delivery.nextAttemptAt,
  next_trigger: delivery.nextTrigger,
});

/**
 * The deliveries `rows` selects, locked first in key order (DELIVERY_LOCK_ORDER), for a writer to
 * change. Their keys are an array, so the writer finds them by the primary key (`id IN (subquery)`
 * may be planned as a scan of the whole table joined to the subquery).
 */
const lockedInKeyOrder = (trx: Knex, rows: Knex.QueryBuilder, lock: "forUpdate" | "forNoKeyUpdate") =>
  trx<DeliveryRow>(deliveries).whereRaw("id = ANY (ARRAY(?))", [rows.select("id").orderBy("id")[lock]()]);

export function postgresDeliveries(db: Knex): DeliveryStore {
  const run = pgPrepared(db, "webhooks", { claim: CLAIM, record: RECORD }, { local: { claim: "enable_sort = off" } });
  return {
    ...knexDeliveries(db),

    claimDue: async (now, leaseExpiresAt, leaseToken, limit) =>
      (await run("claim", [leaseToken, leaseExpiresAt, now, limit])).map((row) => claimedDeliveries.read(row)),

    recordAttempts: async (writes, at) => {
      if (writes.length) await run("record", [JSON.stringify(writes.map(recordElement)), at]);
    },

    releaseLeases: async (ids, leaseToken) => {
      if (!ids.length) return 0;
      const ours = db(deliveries).whereIn("id", ids).andWhere({ lease_token: leaseToken });
      return lockedInKeyOrder(db, ours, "forNoKeyUpdate").update({ lease_token: null, lease_expires_at: null });
    },

    cancelEndpoint: async (endpointId, now, handle) => {
      const trx = handle ?? db;
      const pending = trx(deliveries).where({ endpoint_id: endpointId, status: "pending" }).andWhereNot({ send_when_inactive: true });
      await lockedInKeyOrder(trx, pending, "forNoKeyUpdate").update({
        status: "cancelled",
        next_attempt_at: null,
        lease_token: null,
        lease_expires_at: null,
        updated_at: now,
      });
      await trx(webhookAttempts.name).where({ endpoint_id: endpointId }).whereNotNull("next_attempt_at").update({ next_attempt_at: null });
    },

    /**
     * The deliveries first, locked in key order, then the attempts. A record batch that held some
     * of them has committed by then, attempts included, so the second DELETE sees them; one that
     * waited for them finds them gone and drops its attempts.
     */
    deleteEndpoint: async (endpointId, handle) => {
      const trx = handle ?? db;
      await lockedInKeyOrder(trx, trx(deliveries).where({ endpoint_id: endpointId }), "forUpdate").delete();
      await trx(webhookAttempts.name).where({ endpoint_id: endpointId }).delete();
    },
  };
}
