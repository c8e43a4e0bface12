/**
 * The engine's tables and named queries: the outbox of events, one delivery per (event, endpoint)
 * and one attempt row per try. A service creates the tables from its own migration
 * (`createDeliveryTables`) and keeps its endpoints (subscriptions) in tables of its own.
 *
 * Times are ISO 8601 UTC strings of one fixed width, so they compare as text on both databases.
 */
import type { Knex } from "knex";
import { insertChunked } from "../storage/db.ts";
import { isPostgres, isSqlite } from "../storage/dialect.ts";
import { pgPrepared } from "../storage/postgres/statements.ts";
import { BACKSTOP_AUTOCHECKPOINT_PAGES } from "../storage/sqlite-checkpointer.ts";
import { preparedStatements, withPrepared } from "../storage/sqlite/statements.ts";
import { assertSynchronousFull, sqliteSettingPragmas } from "../storage/sqlite-settings.ts";
import { ATTEMPT_COLUMNS, CLAIMED_COLUMNS, DUE, sqliteDispatch } from "./sqlite-dispatch.js";
import { type DispatchThread, startDispatchThread } from "./sqlite-dispatch-thread.ts";

export type Database = Knex | Knex.Transaction;

/** `pending`: an attempt is due at `next_attempt_at`; the rest are final. */
export type DeliveryStatus = "pending" | "succeeded" | "failed" | "cancelled";
export type Trigger = "event" | "retry" | "manual" | "test";

export interface DeliveryRow {
  id: string;
  event_id: string;
  endpoint_id: string;
  event_type: string;
  body: string;
  status: DeliveryStatus;
  attempts_made: number;
  next_attempt_at: string | null;
  next_trigger: Trigger;
  auto_retry: boolean | number;
  send_when_inactive: boolean | number;
  lease_token: string | null;
  lease_expires_at: string | null;
  created_at: string;
  updated_at: string;
}

export interface AttemptRow {
  id: string;
  delivery_id: string;
  endpoint_id: string;
  event_id: string;
  event_type: string;
  attempt_number: number;
  trigger: Trigger;
  status_code: number | null;
  success: boolean | number;
  error: string | null;
  error_detail: string | null;
  response_excerpt: string | null;
  duration_ms: number;
  attempted_at: string;
  next_attempt_at: string | null;
}

/** Creates the engine's tables (called from a service's migration). */
export async function createDeliveryTables(db: Knex): Promise<void> {
  await db.schema.createTable("webhook_events", (t) => {
    t.string("id", 36).primary();
    t.string("type", 64).notNullable();
    t.text("data").notNullable(); // JSON
    t.string("created_at", 24).notNullable();
  });
  await db.schema.createTable("webhook_deliveries", (t) => {
    t.string("id", 36).primary(); // the delivery id receivers deduplicate by
    t.string("event_id", 36).notNullable();
    t.string("endpoint_id", 36).notNullable().index();
    t.string("event_type", 64).notNullable();
    t.text("body").notNullable(); // the exact bytes sent on every attempt
    t.string("status", 16).notNullable();
    t.integer("attempts_made").notNullable().defaultTo(0);
    t.string("next_attempt_at", 24);
    t.string("next_trigger", 16).notNullable();
    t.boolean("auto_retry").notNullable();
    t.boolean("send_when_inactive").notNullable().defaultTo(false);
    t.string("lease_token", 36);
    t.string("lease_expires_at", 24);
    t.string("created_at", 24).notNullable();
    t.string("updated_at", 24).notNullable();
    t.index(["status", "next_attempt_at"], "webhook_deliveries_due");
  });
  await db.schema.createTable("webhook_attempts", (t) => {
    // No foreign key to the delivery: an attempt that ran while its endpoint was deleted is dropped
    // by the writer, and attempts are history, written in bulk. Few indexes (every one is written
    // per attempt): history is read by endpoint, newest first.
    t.string("id", 36).primary();
    t.string("delivery_id", 36).notNullable();
    t.string("endpoint_id", 36).notNullable();
    t.string("event_id", 36).notNullable();
    t.string("event_type", 64).notNullable();
    t.integer("attempt_number").notNullable();
    t.string("trigger", 16).notNullable();
    t.integer("status_code");
    t.boolean("success").notNullable();
    t.string("error", 32);
    t.string("error_detail", 500);
    t.text("response_excerpt");
    t.integer("duration_ms").notNullable();
    t.string("attempted_at", 24).notNullable();
    t.string("next_attempt_at", 24);
    t.index(["endpoint_id", "attempted_at"], "webhook_attempts_history");
  });
}

/**
 * PostgreSQL: the share of each `webhook_deliveries` page filled by inserts (fillfactor), the rest
 * kept for the new versions of its rows. A claim changes only the lease columns, which no index
 * holds, so when the page has room PostgreSQL writes the new version beside the old one as a HOT
 * update: no entry in any of the table's indexes, and WAL for the changed bytes alone (not the body
 * again). A claim takes rows in insertion order, whole pages of them, so a page needs room for a
 * second version of every row on it: half. The record's update changes the due index's columns and
 * is never HOT, but it can go on the same page once the claim's old versions are pruned. Measured
 * (bench/README.md, 2026-11-27): the claim's database time fell by about half.
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

export async function dropDeliveryTables(db: Knex): Promise<void> {
  for (const t of ["webhook_attempts", "webhook_deliveries", "webhook_events"]) await db.schema.dropTableIfExists(t);
}

/** A delivery as claimed by a dispatcher. */
export type ClaimedRow = Pick<
  DeliveryRow,
  "id" | "event_id" | "endpoint_id" | "event_type" | "body" | "attempts_made" | "next_trigger" | "auto_retry" | "send_when_inactive"
>;

/** The outcome of one attempt, written by `recordAttempts`. */
export interface AttemptWrite {
  leaseToken: string;
  attempt: AttemptRow;
  delivery: { status: DeliveryStatus; attemptsMade: number; nextAttemptAt: string | null; nextTrigger: Trigger };
}

/**
 * The claim and the record on PostgreSQL: named prepared statements on a connection of knex's pool
 * (server/storage/postgres/statements.ts), parsed once per connection and sent as Bind/Execute, with no
 * query build in knex.
 *
 * The claim walks the due index, `(status, next_attempt_at)`, in order and stops after `limit`
 * rows. With statistics that show few pending deliveries (the usual state, and a queue's statistics
 * lag behind a backlog), the planner would rather fetch every due row through a bitmap and sort
 * them all, so every claim of a backlog of n costs O(n) (2026-11-26: 25 ms a claim of about 110
 * rows with 20000 pending, 225 µs of the database's time per delivery). Sorting is switched off for
 * the claim alone (SET LOCAL, its own transaction), which leaves the index's order as the only way.
 * It commits like any other transaction (synchronous_commit as the server has it).
 */
const CLAIM_POSTGRES = `UPDATE webhook_deliveries d SET lease_token = $1, lease_expires_at = $2
       FROM (SELECT id FROM webhook_deliveries WHERE ${DUE.replaceAll("?", "$3")} ORDER BY next_attempt_at LIMIT $4 FOR UPDATE SKIP LOCKED) c
      WHERE d.id = c.id
  RETURNING ${CLAIMED_COLUMNS.split(", ")
    .map((c) => `d.${c}`)
    .join(", ")}`;

/**
 * PostgreSQL: a batch of outcomes in one statement, one round trip (it was a transaction of four or
 * more: BEGIN, the UPDATEs, the INSERT, COMMIT), with the whole batch as one JSON parameter (hundreds
 * of bound values cost more to build and parse than to run). The UPDATE changes only the deliveries
 * whose lease the writer still holds; every attempt is inserted, without its next attempt when the
 * lease was lost, unless its delivery was deleted with its endpoint. One statement is atomic.
 *
 * Lock order (see DELIVERY_LOCK_ORDER): `l` first locks the batch's deliveries in key order, and the
 * UPDATE then changes rows it already holds. Left to the UPDATE, the rows were locked in the join's
 * order, the batch's (the order its attempts ended), and an endpoint's deletion or deactivation,
 * which locks the same rows in its own plan's order, deadlocked with it (40P01: the batch or the
 * admin's request aborted; test/webhooks-lock-order.test.ts). `l` holds every delivery of the batch
 * that still exists, leased to the writer or not, so an attempt is kept exactly when its delivery
 * is (an EXISTS read the statement's snapshot, and kept the attempts of a delivery deleted while
 * the statement waited for it). `l` reads the batch's keys as an array from the primary key's index,
 * in its order: no scan of the table, no sort beyond the batch (the test checks the plan).
 */
export const RECORD_POSTGRES = (() => {
  const integer = new Set(["attempt_number", "status_code", "success", "duration_ms"]);
  const types = ATTEMPT_COLUMNS.map((c) => `${c} ${integer.has(c) ? "integer" : "text"}`).join(", ");
  const values = ATTEMPT_COLUMNS.map((c) =>
    c === "success"
      ? "(w.success = 1)"
      : c === "next_attempt_at"
        ? "CASE WHEN u.id IS NULL THEN NULL ELSE w.next_attempt_at END"
        : `w.${c}`,
  ).join(", ");
  return `WITH w AS (
        SELECT * FROM json_to_recordset($1::json)
          AS w(${types}, lease_token text, status text, attempts_made integer, delivery_next_attempt_at text, next_trigger text)
      ), l AS MATERIALIZED (
        SELECT id FROM webhook_deliveries WHERE id = ANY (ARRAY(SELECT delivery_id FROM w)) ORDER BY id FOR NO KEY UPDATE
      ), u AS (
        UPDATE webhook_deliveries d SET status = w.status, attempts_made = w.attempts_made, next_attempt_at = w.delivery_next_attempt_at,
               next_trigger = w.next_trigger, lease_token = NULL, lease_expires_at = NULL, updated_at = $2
          FROM w WHERE d.id = ANY (ARRAY(SELECT id FROM l)) AND d.id = w.delivery_id AND d.lease_token = w.lease_token
        RETURNING d.id
      )
      INSERT INTO webhook_attempts (${ATTEMPT_COLUMNS.join(", ")})
      SELECT ${values} FROM w LEFT JOIN u ON u.id = w.delivery_id WHERE w.delivery_id IN (SELECT id FROM l)`;
})();

function postgresHotPath(db: Knex) {
  const run = pgPrepared(db, "webhooks", { claim: CLAIM_POSTGRES, record: RECORD_POSTGRES }, { local: { claim: "enable_sort = off" } });
  return {
    claimDue: async (now: string, leaseExpiresAt: string, leaseToken: string, limit: number) =>
      (await run("claim", [leaseToken, leaseExpiresAt, now, limit])) as unknown as ClaimedRow[],
    async recordAttempts(writes: AttemptWrite[], at: string): Promise<void> {
      if (!writes.length) return;
      const json = JSON.stringify(
        writes.map(({ leaseToken, attempt, delivery }) => ({
          ...attempt,
          success: attempt.success ? 1 : 0,
          lease_token: leaseToken,
          status: delivery.status,
          // attempts_made is the attempt's number: the lease kept anyone else from changing it.
          attempts_made: delivery.attemptsMade,
          delivery_next_attempt_at: delivery.nextAttemptAt,
          next_trigger: delivery.nextTrigger,
        })),
      );
      await run("record", [json, at]);
    },
  };
}

/**
 * The claim and the record on SQLite: statements prepared once (sqlite-dispatch.js), on the dispatch
 * thread's own connection when the database is a file (sqlite-dispatch-thread.ts), else on knex's
 * connection, held for the whole statement or transaction so that nothing interleaves.
 */
function sqliteHotPath(db: Knex) {
  const filename = (db.client.config.connection as { filename?: string } | undefined)?.filename;
  if (!filename || filename === ":memory:" || filename.startsWith("file:")) {
    const prepared = new WeakMap<object, ReturnType<typeof sqliteDispatch>>();
    const run = withPrepared(db, {});
    const on = <T>(fn: (d: ReturnType<typeof sqliteDispatch>) => T) =>
      run((_s, conn) => {
        let d = prepared.get(conn);
        if (!d) {
          d = sqliteDispatch(conn as never);
          prepared.set(conn, d);
        }
        return fn(d);
      });
    return {
      claimDue: (now: string, leaseExpiresAt: string, leaseToken: string, limit: number) =>
        on((d) => d.claimDue(now, leaseExpiresAt, leaseToken, limit) as ClaimedRow[]),
      recordAttempts: (writes: AttemptWrite[], at: string) => on((d) => d.recordAttempts(writes as never, at)),
      close: async () => {},
    };
  }
  let thread: DispatchThread | undefined;
  const threadOf = () => {
    if (!thread) {
      thread = startDispatchThread(filename, sqliteSettingPragmas({ autocheckpointPages: BACKSTOP_AUTOCHECKPOINT_PAGES }), (value) =>
        assertSynchronousFull(value, "the webhook dispatch thread's connection"),
      );
      // The connection closes with the database at the latest.
      const client = db.client as { destroy(callback?: unknown): Promise<void> };
      const destroy = client.destroy.bind(client);
      const started = thread;
      client.destroy = async (callback) => {
        await started.stop();
        return destroy(callback);
      };
    }
    return thread;
  };
  return {
    claimDue: (now: string, leaseExpiresAt: string, leaseToken: string, limit: number) =>
      threadOf().claimDue(now, leaseExpiresAt, leaseToken, limit),
    recordAttempts: (writes: AttemptWrite[], at: string) => threadOf().recordAttempts(writes, at),
    /** Closes the thread's connection (a later call starts another). */
    close: async () => {
      const t = thread;
      thread = undefined;
      await t?.stop();
    },
  };
}

/**
 * DELIVERY_LOCK_ORDER. On PostgreSQL every statement that may wait for the locks of several delivery
 * rows takes them in key order (`id`), before it changes any: the record batch (RECORD_POSTGRES),
 * an endpoint's deactivation and deletion, and giving leases back. Two transactions that lock
 * overlapping rows in different orders can each hold a row the other waits for, and PostgreSQL then
 * aborts one (40P01); in one order, the later waits for the earlier. A plan's own order is no
 * order: a bitmap scan visits rows as they lie in the table, a join as its outer side comes. The
 * writers that take no part: the claim never waits (SKIP LOCKED), a manual redelivery and a
 * cancelled claim change one row and hold nothing else, new deliveries are new rows, and the
 * retention purge skips what another transaction holds (server/storage/retention.ts). A writer of
 * both tables locks deliveries before attempts. SQLite has one writer at a time: nothing to order.
 */
export function createDeliveryQueries(db: Knex) {
  const sqlite = isSqlite(db) ? sqliteHotPath(db) : undefined;
  const postgres = sqlite ? undefined : postgresHotPath(db);
  /**
   * PostgreSQL: the deliveries `rows` selects, locked first in key order (DELIVERY_LOCK_ORDER), for
   * a writer to change. Their keys are an array, so the writer finds them by the primary key (`id
   * IN (subquery)` may be planned as a scan of the whole table joined to the subquery).
   */
  const lockedInKeyOrder = (trx: Database, rows: Knex.QueryBuilder, lock: "forUpdate" | "forNoKeyUpdate") =>
    trx("webhook_deliveries").whereRaw("id = ANY (ARRAY(?))", [rows.select("id").orderBy("id")[lock]()]);
  // SQLite: the outbox write of every event, in the transaction that records it, prepared once.
  const events = sqlite
    ? preparedStatements({ insert: "INSERT INTO webhook_events (id, type, data, created_at) VALUES (@id, @type, @data, @created_at)" })
    : undefined;
  return {
    db,
    insertEvent: async (row: { id: string; type: string; data: string; created_at: string }, trx: Database = db): Promise<void> => {
      if (events) await events(trx, (s) => s.insert.run(row));
      else await trx("webhook_events").insert(row);
    },
    insertDeliveries: (rows: DeliveryRow[], trx: Database = db) => insertChunked(trx, "webhook_deliveries", rows),

    /**
     * Reserves up to `limit` due deliveries for `leaseMs`: pending, due, and not leased (or leased
     * by a dispatcher whose lease ran out: it died or hung). PostgreSQL: `FOR UPDATE SKIP LOCKED`,
     * so concurrent dispatchers (other instances) take disjoint rows without waiting; SQLite: one
     * UPDATE … WHERE id IN (SELECT …) statement, atomic on its single connection.
     */
    claimDue: (now: string, leaseExpiresAt: string, leaseToken: string, limit: number): Promise<ClaimedRow[]> =>
      (sqlite ?? postgres!).claimDue(now, leaseExpiresAt, leaseToken, limit),

    /** Gives claimed deliveries back at once (graceful shutdown), if still ours. */
    releaseLeases: (ids: string[], leaseToken: string) => {
      if (!ids.length) return Promise.resolve(0);
      const ours = db("webhook_deliveries").whereIn("id", ids).andWhere({ lease_token: leaseToken });
      return (sqlite ? ours : lockedInKeyOrder(db, ours, "forNoKeyUpdate")).update({
        lease_token: null,
        lease_expires_at: null,
      });
    },

    /** Final state without an attempt (the endpoint is gone or inactive). */
    cancelClaimed: (id: string, leaseToken: string, at: string) =>
      db("webhook_deliveries")
        .where({ id, lease_token: leaseToken })
        .update({ status: "cancelled", next_attempt_at: null, lease_token: null, lease_expires_at: null, updated_at: at }),

    /**
     * Writes many attempts in one transaction (group commit: one fsync for a batch). A delivery's
     * state changes only if the writer still holds its lease; an attempt whose delivery was
     * cancelled or re-leased meanwhile is still recorded (it happened), without a next attempt,
     * and one whose delivery was deleted with its endpoint is dropped (PostgreSQL: one statement per
     * batch; SQLite: one IMMEDIATE transaction on the dispatch thread). A lease token is only ever held by a pending
     * delivery (every other change clears it), so the token alone is the condition: with `status`
     * in it too, SQLite picks the status index and scans every pending row.
     */
    recordAttempts: (writes: AttemptWrite[], at: string): Promise<void> => (sqlite ?? postgres!).recordAttempts(writes, at),

    /** Releases what the dispatcher holds besides the pool (SQLite: the dispatch thread). */
    close: (): Promise<void> => sqlite?.close() ?? Promise.resolve(),

    findDelivery: (id: string, endpointId: string, trx: Database = db) =>
      trx<DeliveryRow>("webhook_deliveries").where({ id, endpoint_id: endpointId }).first(),

    /** Makes a delivery due now as a manual attempt without automatic retries (any state). */
    scheduleManual: (id: string, now: string, trx: Database = db) =>
      trx("webhook_deliveries").where({ id }).update({
        status: "pending",
        next_attempt_at: now,
        next_trigger: "manual",
        auto_retry: false,
        lease_token: null,
        lease_expires_at: null,
        updated_at: now,
      }),

    /** Stops every pending delivery of an endpoint (deactivated or deleted). */
    cancelEndpoint: async (endpointId: string, now: string, trx: Database = db) => {
      const pending = trx("webhook_deliveries")
        .where({ endpoint_id: endpointId, status: "pending" })
        .andWhereNot({ send_when_inactive: true });
      await (sqlite ? pending : lockedInKeyOrder(trx, pending, "forNoKeyUpdate")).update({
        status: "cancelled",
        next_attempt_at: null,
        lease_token: null,
        lease_expires_at: null,
        updated_at: now,
      });
      await trx("webhook_attempts").where({ endpoint_id: endpointId }).whereNotNull("next_attempt_at").update({ next_attempt_at: null });
    },

    /**
     * PostgreSQL: the deliveries first, locked in key order, then the attempts. A record batch that
     * held some of them has committed by then, attempts included, so the second DELETE sees them;
     * one that waited for them finds them gone and drops its attempts.
     */
    deleteEndpoint: async (endpointId: string, trx: Database = db) => {
      if (sqlite) {
        await trx("webhook_attempts").where({ endpoint_id: endpointId }).delete();
        await trx("webhook_deliveries").where({ endpoint_id: endpointId }).delete();
        return;
      }
      await lockedInKeyOrder(trx, trx("webhook_deliveries").where({ endpoint_id: endpointId }), "forUpdate").delete();
      await trx("webhook_attempts").where({ endpoint_id: endpointId }).delete();
    },
  };
}

export type DeliveryQueries = ReturnType<typeof createDeliveryQueries>;

/**
 * The queue as its metrics see it: pending deliveries and the earliest `next_attempt_at` among
 * them. One statement over the `(status, next_attempt_at)` index: the count walks only pending
 * entries, the minimum is the first of them.
 */
export async function pendingDeliveries(db: Knex): Promise<{ depth: number; earliestDueAt: string | null }> {
  const row = (await db("webhook_deliveries")
    .where({ status: "pending" })
    .count({ depth: "*" })
    .min({ earliest: "next_attempt_at" })
    .first()) as { depth: number | string; earliest: string | null } | undefined;
  return { depth: Number(row?.depth ?? 0), earliestDueAt: row?.earliest ?? null };
}
