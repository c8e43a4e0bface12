// @ts-check
// The dispatcher's two writes on SQLite whose cost matters (the claim and the batch of attempt
// records) as better-sqlite3 statements prepared once on one connection. Plain JavaScript
// (type-checked through JSDoc) beside the dispatch thread's worker module
// (server/webhooks/sqlite-dispatch-worker.js), which runs it on its own connection; deliveries.ts
// runs it on the event loop when there is no thread. The rules are the PostgreSQL statements'
// (../postgres/deliveries.ts): one row at a time inside one IMMEDIATE transaction, so a batch costs
// one COMMIT and one fsync.
//
// The column lists are the schema's (../schema.ts, erasable TypeScript that the thread loads as it
// is), so a column added there reaches these statements too; deliveries.ts checks the statements
// against the planner rule of server/storage/sqlite/statements.ts when it loads.
import { claimedDeliveries, webhookAttempts } from "../schema.ts";

/** @typedef {import("../../../storage/sqlite/statements.ts").Connection} Connection */
/** @typedef {import("../deliveries.ts").AttemptWrite} AttemptWrite */

/** Due: pending, its time has come, and not leased (or leased by a dispatcher whose lease ran out). */
const DUE = "status = 'pending' AND next_attempt_at <= @now AND (lease_expires_at IS NULL OR lease_expires_at <= @now)";

/**
 * Written as the planner rule of server/storage/sqlite/statements.ts wants them, every value bound
 * to a `=` term or a LIMIT written `+?`, which deliveries.ts checks: a bound LIMIT, and the terms of
 * the claim's UPDATE over its own subquery, would otherwise make SQLite prepare them again on every run.
 */
export const SQL = {
  claim: `UPDATE webhook_deliveries SET lease_token = +@leaseToken, lease_expires_at = +@leaseExpiresAt
           WHERE id IN (SELECT id FROM webhook_deliveries WHERE ${DUE} ORDER BY next_attempt_at LIMIT +@limit)
       RETURNING ${claimedDeliveries.list()}`,
  // attempts_made + 1 is the attempt's number: the lease kept anyone else from changing it.
  succeeded: `UPDATE webhook_deliveries SET status = 'succeeded', attempts_made = attempts_made + 1, next_attempt_at = NULL,
              lease_token = NULL, lease_expires_at = NULL, updated_at = +? WHERE id = +? AND lease_token = +?`,
  settled: `UPDATE webhook_deliveries SET status = +?, attempts_made = +?, next_attempt_at = +?, next_trigger = +?,
            lease_token = NULL, lease_expires_at = NULL, updated_at = +? WHERE id = +? AND lease_token = +?`,
  exists: "SELECT 1 FROM webhook_deliveries WHERE id = +?",
  insertAttempt: webhookAttempts.insertNamed(),
};

/**
 * The claim and the record on `conn`.
 * @param {Connection} conn
 */
export function sqliteDispatch(conn) {
  /** @type {Record<keyof typeof SQL, import("../../../storage/sqlite/statements.ts").Statement>} */
  const s = /** @type {never} */ (Object.fromEntries(Object.entries(SQL).map(([name, sql]) => [name, conn.prepare(sql)])));
  const record = conn.transaction(
    /** @param {AttemptWrite[]} writes @param {string} at */
    (writes, at) => {
      for (const { leaseToken, attempt: a, delivery: d } of writes) {
        const won =
          d.status === "succeeded"
            ? s.succeeded.run(at, a.delivery_id, leaseToken).changes === 1
            : s.settled.run(d.status, d.attemptsMade, d.nextAttemptAt, d.nextTrigger, at, a.delivery_id, leaseToken).changes === 1;
        // Lost the lease: the attempt still happened and is recorded, without a next attempt; a
        // delivery deleted with its endpoint meanwhile takes its history with it.
        if (!won && !s.exists.get(a.delivery_id)) continue;
        s.insertAttempt.run({ ...a, success: a.success ? 1 : 0, next_attempt_at: won ? a.next_attempt_at : null });
      }
    },
  );
  return {
    /**
     * Leases up to `limit` due deliveries (one statement, atomic: one writer at a time on the file).
     * @param {string} now @param {string} leaseExpiresAt @param {string} leaseToken @param {number} limit
     */
    claimDue: (now, leaseExpiresAt, leaseToken, limit) => s.claim.all({ now, leaseExpiresAt, leaseToken, limit }),
    /** @param {AttemptWrite[]} writes @param {string} at */
    recordAttempts: (writes, at) => record.immediate(writes, at),
  };
}
