/**
 * The engine's tables and named queries: the outbox of events, one delivery per (event, endpoint)
 * and one attempt row per try. A service creates the tables from its own migration
 * (`createDeliveryTables`) and keeps its endpoints (subscriptions) in tables of its own.
 *
 * Times are ISO 8601 UTC strings of one fixed width, so they compare as text on both databases.
 */
import type { Knex } from "knex";
import { insertChunked } from "../storage/db.ts";
import { BACKSTOP_AUTOCHECKPOINT_PAGES } from "../storage/sqlite-checkpointer.ts";
import { isSqlite, withPrepared } from "../storage/sqlite-prepared.ts";
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
 * PostgreSQL: attempt rows in one statement with one JSON parameter: a multi-row INSERT with
 * hundreds of bound values costs more to build and prepare than to run, and attempts are the hot
 * write. (SQLite inserts them one by one through a prepared statement: sqliteHotPath.)
 */
async function insertAttemptsPostgres(trx: Database, rows: AttemptRow[]): Promise<void> {
  if (!rows.length) return;
  const json = JSON.stringify(rows.map((r) => ({ ...r, success: r.success ? 1 : 0 })));
  const columns = ATTEMPT_COLUMNS.join(", ");
  const typed = ATTEMPT_COLUMNS.map((c) => (c === "success" ? "(r.success = 1)" : `r.${c}`)).join(", ");
  const types = ATTEMPT_COLUMNS.map(
    (c) => `${c} ${["attempt_number", "status_code", "success", "duration_ms"].includes(c) ? "integer" : "text"}`,
  ).join(", ");
  await trx.raw(`INSERT INTO webhook_attempts (${columns}) SELECT ${typed} FROM json_to_recordset(?::json) AS r(${types})`, [json]);
}

async function claimDuePostgres(db: Knex, now: string, leaseExpiresAt: string, leaseToken: string, limit: number): Promise<ClaimedRow[]> {
  const result = await db.raw(
    `UPDATE webhook_deliveries d SET lease_token = ?, lease_expires_at = ?
       FROM (SELECT id FROM webhook_deliveries WHERE ${DUE} ORDER BY next_attempt_at LIMIT ? FOR UPDATE SKIP LOCKED) c
      WHERE d.id = c.id
  RETURNING ${CLAIMED_COLUMNS.split(", ")
    .map((c) => `d.${c}`)
    .join(", ")}`,
    [leaseToken, leaseExpiresAt, now, now, limit],
  );
  return result.rows as ClaimedRow[];
}

function recordAttemptsPostgres(db: Knex, writes: AttemptWrite[], at: string): Promise<void> {
  return db.transaction(async (trx) => {
    const won = new Set<string>();
    const released = { lease_token: null, lease_expires_at: null, updated_at: at };
    const successes = new Map<string, string[]>();
    for (const w of writes) {
      if (w.delivery.status !== "succeeded") continue;
      successes.set(w.leaseToken, [...(successes.get(w.leaseToken) ?? []), w.attempt.delivery_id]);
    }
    for (const [leaseToken, ids] of successes) {
      for (let i = 0; i < ids.length; i += 500) {
        // attempts_made + 1 is the attempt's number: the lease kept anyone else from changing it.
        const rows = (await trx("webhook_deliveries")
          .whereIn("id", ids.slice(i, i + 500))
          .andWhere({ lease_token: leaseToken })
          .update({ status: "succeeded", attempts_made: trx.raw("attempts_made + 1"), next_attempt_at: null, ...released }, [
            "id",
          ])) as Array<{ id: string }>;
        for (const r of rows) won.add(r.id);
      }
    }
    for (const w of writes) {
      if (w.delivery.status === "succeeded") continue;
      const updated = await trx("webhook_deliveries")
        .where({ id: w.attempt.delivery_id, lease_token: w.leaseToken })
        .update({
          status: w.delivery.status,
          attempts_made: w.delivery.attemptsMade,
          next_attempt_at: w.delivery.nextAttemptAt,
          next_trigger: w.delivery.nextTrigger,
          ...released,
        });
      if (updated === 1) won.add(w.attempt.delivery_id);
    }
    const rows: AttemptRow[] = [];
    for (const w of writes) {
      if (won.has(w.attempt.delivery_id)) rows.push(w.attempt);
      else if (await trx("webhook_deliveries").where({ id: w.attempt.delivery_id }).first("id"))
        rows.push({ ...w.attempt, next_attempt_at: null });
    }
    await insertAttemptsPostgres(trx, rows);
  });
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

export function createDeliveryQueries(db: Knex) {
  const sqlite = isSqlite(db) ? sqliteHotPath(db) : undefined;
  return {
    db,
    insertEvent: (row: { id: string; type: string; data: string; created_at: string }, trx: Database = db) =>
      trx("webhook_events").insert(row),
    insertDeliveries: (rows: DeliveryRow[], trx: Database = db) => insertChunked(trx, "webhook_deliveries", rows),

    /**
     * Reserves up to `limit` due deliveries for `leaseMs`: pending, due, and not leased (or leased
     * by a dispatcher whose lease ran out: it died or hung). PostgreSQL: `FOR UPDATE SKIP LOCKED`,
     * so concurrent dispatchers (other instances) take disjoint rows without waiting; SQLite: one
     * UPDATE … WHERE id IN (SELECT …) statement, atomic on its single connection.
     */
    claimDue: (now: string, leaseExpiresAt: string, leaseToken: string, limit: number): Promise<ClaimedRow[]> =>
      sqlite ? sqlite.claimDue(now, leaseExpiresAt, leaseToken, limit) : claimDuePostgres(db, now, leaseExpiresAt, leaseToken, limit),

    /** Gives claimed deliveries back at once (graceful shutdown), if still ours. */
    releaseLeases: (ids: string[], leaseToken: string) =>
      ids.length
        ? db("webhook_deliveries")
            .whereIn("id", ids)
            .andWhere({ lease_token: leaseToken })
            .update({ lease_token: null, lease_expires_at: null })
        : Promise.resolve(0),

    /** Final state without an attempt (the endpoint is gone or inactive). */
    cancelClaimed: (id: string, leaseToken: string, at: string) =>
      db("webhook_deliveries")
        .where({ id, lease_token: leaseToken })
        .update({ status: "cancelled", next_attempt_at: null, lease_token: null, lease_expires_at: null, updated_at: at }),

    /**
     * Writes many attempts in one transaction (group commit: one fsync for a batch). A delivery's
     * state changes only if the writer still holds its lease; an attempt whose delivery was
     * cancelled or re-leased meanwhile is still recorded (it happened), without a next attempt,
     * and one whose delivery was deleted with its endpoint is dropped. Successes, the common case,
     * are closed with one UPDATE per claim batch. A lease token is only ever held by a pending
     * delivery (every other change clears it), so the token alone is the condition: with `status`
     * in it too, SQLite picks the status index and scans every pending row.
     */
    recordAttempts: (writes: AttemptWrite[], at: string): Promise<void> =>
      sqlite ? sqlite.recordAttempts(writes, at) : recordAttemptsPostgres(db, writes, at),

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
      await trx("webhook_deliveries")
        .where({ endpoint_id: endpointId, status: "pending" })
        .andWhereNot({ send_when_inactive: true })
        .update({ status: "cancelled", next_attempt_at: null, lease_token: null, lease_expires_at: null, updated_at: now });
      await trx("webhook_attempts").where({ endpoint_id: endpointId }).whereNotNull("next_attempt_at").update({ next_attempt_at: null });
    },

    deleteEndpoint: async (endpointId: string, trx: Database = db) => {
      await trx("webhook_attempts").where({ endpoint_id: endpointId }).delete();
      await trx("webhook_deliveries").where({ endpoint_id: endpointId }).delete();
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
