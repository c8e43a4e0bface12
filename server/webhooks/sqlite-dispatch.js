// @ts-check
// The dispatcher's two hot writes on SQLite (the claim and the batch of attempt records) as
// better-sqlite3 statements prepared once on one connection. Plain JavaScript (type-checked through
// JSDoc) because the same code runs on the dispatch thread (sqlite-dispatch-worker.js), which loads
// the same under `node --import tsx` and under vitest, and on the event loop when there is no thread
// (store.ts). The rules are the PostgreSQL path's (store.ts): one row at a time inside one IMMEDIATE
// transaction, so a batch costs one COMMIT and one fsync.

/** @typedef {{ run(...params: unknown[]): { changes: number }, get(...params: unknown[]): unknown, all(...params: unknown[]): unknown[] }} Statement */
/** @typedef {{ prepare(sql: string): Statement, transaction<A extends unknown[], R>(fn: (...args: A) => R): ((...args: A) => R) & { immediate: (...args: A) => R } }} Connection */

/** The columns a claim returns (store.ts ClaimedRow). */
export const CLAIMED_COLUMNS = "id, event_id, endpoint_id, event_type, body, attempts_made, next_trigger, auto_retry, send_when_inactive";

/** An attempt row's columns, in the order of `insertAttempt`'s parameters. */
export const ATTEMPT_COLUMNS = /** @type {const} */ ([
  "id",
  "delivery_id",
  "endpoint_id",
  "event_id",
  "event_type",
  "attempt_number",
  "trigger",
  "status_code",
  "success",
  "error",
  "error_detail",
  "response_excerpt",
  "duration_ms",
  "attempted_at",
  "next_attempt_at",
]);

/** Due: pending, its time has come, and not leased (or leased by a dispatcher whose lease ran out). */
export const DUE = "status = 'pending' AND next_attempt_at <= ? AND (lease_expires_at IS NULL OR lease_expires_at <= ?)";

const SQL = {
  // `LIMIT +?`: a bound LIMIT made SQLite re-prepare the claim on every run (server/storage/sqlite/statements.ts).
  claim: `UPDATE webhook_deliveries SET lease_token = ?, lease_expires_at = ?
           WHERE id IN (SELECT id FROM webhook_deliveries WHERE ${DUE} ORDER BY next_attempt_at LIMIT +?)
       RETURNING ${CLAIMED_COLUMNS}`,
  // attempts_made + 1 is the attempt's number: the lease kept anyone else from changing it.
  succeeded: `UPDATE webhook_deliveries SET status = 'succeeded', attempts_made = attempts_made + 1, next_attempt_at = NULL,
              lease_token = NULL, lease_expires_at = NULL, updated_at = ? WHERE id = ? AND lease_token = ?`,
  settled: `UPDATE webhook_deliveries SET status = ?, attempts_made = ?, next_attempt_at = ?, next_trigger = ?,
            lease_token = NULL, lease_expires_at = NULL, updated_at = ? WHERE id = ? AND lease_token = ?`,
  exists: "SELECT 1 FROM webhook_deliveries WHERE id = ?",
  insertAttempt: `INSERT INTO webhook_attempts (${ATTEMPT_COLUMNS.join(", ")}) VALUES (${ATTEMPT_COLUMNS.map(() => "?").join(", ")})`,
};

/**
 * @typedef {{
 *   leaseToken: string,
 *   attempt: Record<(typeof ATTEMPT_COLUMNS)[number], unknown>,
 *   delivery: { status: string, attemptsMade: number, nextAttemptAt: string | null, nextTrigger: string },
 * }} AttemptWrite
 */

/**
 * The claim and the record on `conn`.
 * @param {Connection} conn
 */
export function sqliteDispatch(conn) {
  /** @type {Record<keyof typeof SQL, Statement>} */
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
        s.insertAttempt.run(
          a.id,
          a.delivery_id,
          a.endpoint_id,
          a.event_id,
          a.event_type,
          a.attempt_number,
          a.trigger,
          a.status_code,
          a.success ? 1 : 0,
          a.error,
          a.error_detail,
          a.response_excerpt,
          a.duration_ms,
          a.attempted_at,
          won ? a.next_attempt_at : null,
        );
      }
    },
  );
  return {
    /**
     * Leases up to `limit` due deliveries (one statement, atomic: one writer at a time on the file).
     * @param {string} now @param {string} leaseExpiresAt @param {string} leaseToken @param {number} limit
     */
    claimDue: (now, leaseExpiresAt, leaseToken, limit) => s.claim.all(leaseToken, leaseExpiresAt, now, now, limit),
    /** @param {AttemptWrite[]} writes @param {string} at */
    recordAttempts: (writes, at) => record.immediate(writes, at),
  };
}
