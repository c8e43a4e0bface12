/**
 * Writers of the same delivery rows at the same time must not deadlock (PostgreSQL aborts one of
 * two transactions that wait for each other's row locks with 40P01: a 500 to the admin deleting or
 * deactivating an endpoint, or a record batch lost, so its deliveries are sent again after their
 * lease). Every writer that may wait for a delivery row locks its rows in one order, the primary
 * key's, and the retention purge never waits at all.
 *
 * Each case is provoked the same way on PostgreSQL: a third transaction holds the middle row X of
 * deliveries A < X < B, the first writer starts and waits for X (holding what it locked before it),
 * the second starts and waits for a lock too, then X is released. A writer that locks A, X, B in
 * the plan's order and one that locks B then A (a record batch's join order follows the batch)
 * then deadlock; two that both lock in key order queue behind each other. The outcome must be the
 * one the lease protocol gives whichever writer comes first: nothing fails, lost or written twice.
 * On SQLite (one writer at a time) the same writers run concurrently and must give the same outcome.
 * Run on the identity and email schemas (their triggers write in the same transactions).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Knex } from "knex";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { migrations as emailMigrations } from "../../handlers/email/storage/migrations/index.ts";
import { migrations as identityMigrations } from "../../handlers/identity/storage/migrations/index.ts";
import { type Database, openDatabase } from "../../server/storage/db.ts";
import { isPostgres } from "../../server/storage/dialect.ts";
import { createPurger } from "../../server/storage/retention.ts";
import { webhookHistoryRules } from "../../server/webhooks/retention-rules.ts";
import type { AttemptWrite, DeliveryStore } from "../../server/webhooks/storage/deliveries.ts";
import { createDeliveryStore } from "../../server/webhooks/storage/index.ts";
import { RECORD } from "../../server/webhooks/storage/postgres/deliveries.ts";
import type { DeliveryRow } from "../../server/webhooks/storage/schema.ts";
import { createDatabase, postgresServer } from "../support/postgres-database.ts";
import { firstAttempt, pendingDelivery } from "./delivery-rows.ts";

const dir = mkdtempSync(join(tmpdir(), "lock-order-"));
const cleanups: Array<() => void | Promise<void>> = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  rmSync(dir, { recursive: true, force: true });
});

let server: ReturnType<typeof postgresServer> | undefined;
async function postgresUrl(prefix: string): Promise<string> {
  if (!server) {
    server = postgresServer(dir);
    cleanups.push(server.stop);
  }
  const database = await createDatabase(server.adminUrl, prefix);
  cleanups.push(() => database.drop());
  return database.url;
}

const T0 = "2026-01-01T00:00:00.000Z";
const at = (s: number) => new Date(Date.parse(T0) + s * 1000).toISOString();

/** Delivery `id` of endpoint `ep`, due at second `due`; ids sort as they are inserted. */
const delivery = (id: string, ep: string, due: number): DeliveryRow => ({ ...pendingDelivery(id, ep, at(due)), created_at: at(due) });

/** The outcome of the first attempt of `id` under `leaseToken`: a 204, or a 500 retried an hour later. */
const write = (id: string, ep: string, leaseToken: string, success: boolean, attemptAt = at(100)): AttemptWrite => ({
  leaseToken,
  attempt: {
    ...firstAttempt({ id: `a-${id}-${leaseToken}`, deliveryId: id, success, at: attemptAt, retryAt: at(3600) }),
    endpoint_id: ep,
  },
  delivery: { status: success ? "succeeded" : "pending", attemptsMade: 1, nextAttemptAt: success ? null : at(3600), nextTrigger: "retry" },
});

const schemas = { identity: identityMigrations, email: emailMigrations };

for (const kind of ["sqlite", "postgres"] as const) {
  for (const service of ["identity", "email"] as const) {
    describe(`webhook delivery writers lock rows in one order (${service} on ${kind})`, () => {
      let db: Database;
      let q: DeliveryStore;

      beforeAll(async () => {
        db = await openDatabase({
          service,
          databaseUrl: kind === "postgres" ? await postgresUrl(`lock_order_${service}`) : undefined,
          dataDir: join(dir, `${service}-${kind}`),
          migrations: schemas[service],
        });
        cleanups.push(() => db.destroy());
        q = createDeliveryStore(db);
        cleanups.push(() => q.close());
        // Other endpoints' finished deliveries, as in any database that has run a while: the
        // planner then joins a record batch to the deliveries by key, in the batch's order (on a
        // few thousand rows it would scan them, in the table's order).
        if (isPostgres(db)) {
          await db.raw(
            `INSERT INTO webhook_deliveries (id, event_id, endpoint_id, event_type, body, status, attempts_made, next_trigger,
                          auto_retry, send_when_inactive, created_at, updated_at)
                        SELECT 'f-' || lpad(i::text, 6, '0'), 'e', 'other', 'x', '{}', 'succeeded', 1, 'event', true, false, ?, ?
                          FROM generate_series(1, 20000) i`,
            [T0, T0],
          );
          await db.raw("ANALYZE");
        }
      });

      /** Deliveries A < X < B (`<p>-1a`, `<p>-2x`, `<p>-3b`) of endpoint `<p>`, inserted and due in that order, claimed under `<p>-lease`. */
      async function claimedTriple(p: string): Promise<{ ep: string; a: string; x: string; b: string }> {
        const ids = { ep: p, a: `${p}-1a`, x: `${p}-2x`, b: `${p}-3b` };
        await q.insertDeliveries([delivery(ids.a, p, 1), delivery(ids.x, p, 2), delivery(ids.b, p, 3)]);
        const claimed = await q.claimDue(at(10), at(60), `${p}-lease`, 3);
        expect(claimed.map((c) => c.id).sort()).toEqual([ids.a, ids.x, ids.b]);
        return ids;
      }

      /** Waits until `n` backends of this database wait for a lock (PostgreSQL). */
      async function lockWaiters(n: number, started: Array<Promise<unknown>>): Promise<void> {
        const settled = started.map(() => false);
        started.forEach(
          (p, i) =>
            void p.then(
              () => (settled[i] = true),
              () => (settled[i] = true),
            ),
        );
        for (const deadline = Date.now() + 10_000; Date.now() < deadline; ) {
          const row = (await db.raw(
            "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'",
          )) as { rows: Array<{ n: number }> };
          if (row.rows[0]!.n >= n) return;
          // A writer that ended without waiting did not take the path this case provokes.
          if (settled.some(Boolean)) throw new Error(`writer ${settled.indexOf(true) + 1} ended before ${n} writers waited for a lock`);
          await new Promise((r) => setTimeout(r, 10));
        }
        throw new Error(`${n} writers never waited for a lock`);
      }

      /**
       * Runs `writers` so that each waits for a row lock before the next starts, with the delivery
       * `held` (or the row `held` selects) locked by another transaction until all of them wait
       * (PostgreSQL); concurrently on SQLite. Resolves to what each writer ended with, failures included.
       */
      async function interleave(
        held: string | ((trx: Knex.Transaction) => Knex.QueryBuilder),
        writers: Array<() => Promise<unknown>>,
      ): Promise<PromiseSettledResult<unknown>[]> {
        if (!isPostgres(db)) return Promise.allSettled(writers.map((w) => w()));
        const blocker = await db.transaction();
        await (typeof held === "string" ? blocker("webhook_deliveries").where({ id: held }) : held(blocker)).forUpdate().select();
        const started: Array<Promise<unknown>> = [];
        try {
          for (const w of writers) {
            started.push(w());
            await lockWaiters(started.length, started);
          }
        } finally {
          await blocker.commit();
        }
        return Promise.allSettled(started);
      }

      const fulfilled = (results: PromiseSettledResult<unknown>[]) =>
        expect(results.map((r) => (r.status === "rejected" ? String(r.reason) : "ok"))).toEqual(results.map(() => "ok"));
      const deliveries = (ep: string) => db<DeliveryRow>("webhook_deliveries").where({ endpoint_id: ep }).orderBy("id");
      const attempts = (ep: string) => db("webhook_attempts").where({ endpoint_id: ep }).orderBy("id");

      it("deleting an endpoint while a record batch writes its deliveries: both succeed, nothing of the endpoint is left", async () => {
        const { ep, a, x, b } = await claimedTriple("del");
        const results = await interleave(x, [
          () => db.transaction((trx) => q.deleteEndpoint(ep, trx)),
          // The batch in the order its attempts ended: B before A.
          () => q.recordAttempts([write(b, ep, "del-lease", true), write(a, ep, "del-lease", false)], at(100)),
        ]);
        fulfilled(results);
        expect(await deliveries(ep)).toEqual([]);
        // Recorded before the deletion, the attempts went with it; after it, they were dropped.
        expect(await attempts(ep)).toEqual([]);
      });

      it("a record batch that waited for an endpoint's deletion drops its attempts: none is left without its delivery", async () => {
        const { ep, a, b } = await claimedTriple("gone");
        const recorded = await db.transaction(async (trx) => {
          await q.deleteEndpoint(ep, trx);
          // The batch starts before the deletion commits and waits for the rows it deletes.
          const batch = q.recordAttempts([write(b, ep, "gone-lease", true), write(a, ep, "gone-lease", true)], at(100));
          if (isPostgres(db)) await lockWaiters(1, [batch]);
          return { batch };
        });
        await recorded.batch;
        expect(await deliveries(ep)).toEqual([]);
        expect(await attempts(ep)).toEqual([]);
      });

      it("deactivating an endpoint while a record batch writes its deliveries: both succeed, every delivery cancelled, each attempt recorded once", async () => {
        const { ep, a, x, b } = await claimedTriple("off");
        const results = await interleave(x, [
          () => db.transaction((trx) => q.cancelEndpoint(ep, at(50), trx)),
          () => q.recordAttempts([write(b, ep, "off-lease", false), write(a, ep, "off-lease", false)], at(100)),
        ]);
        fulfilled(results);
        const rows = await deliveries(ep);
        expect(rows.map((r) => [r.id, r.status, r.next_attempt_at, r.lease_token])).toEqual([
          [a, "cancelled", null, null],
          [x, "cancelled", null, null],
          [b, "cancelled", null, null],
        ]);
        // Whichever came first, the attempts happened and are history, with no next attempt.
        expect((await attempts(ep)).map((r) => [r.delivery_id, r.next_attempt_at])).toEqual([
          [a, null],
          [b, null],
        ]);
      });

      it.skipIf(kind === "sqlite")(
        "the record batch finds its deliveries by key and locks them in the index's order: no scan or sort of the table",
        async () => {
          const json = JSON.stringify(
            [write("f-000002", "other", "l", true), write("f-000001", "other", "l", true)].map((w) => ({ ...w.attempt, lease_token: "l" })),
          );
          const plan = (
            (await db.raw(`EXPLAIN (COSTS OFF) ${RECORD.replace("$1", "?").replace("$2", "?")}`, [json, at(100)])) as {
              rows: Array<Record<string, string>>;
            }
          ).rows
            .map((r) => r["QUERY PLAN"])
            .join("\n");
          // LockRows right over the index scan (after the InitPlan that makes the batch's keys an array).
          expect(plan).toMatch(/LockRows\n(?:.*InitPlan.*\n.*\n)?\s*-> +Index Scan using webhook_deliveries_pkey on webhook_deliveries\n/);
          expect(plan).not.toMatch(/Seq Scan on webhook_deliveries/);
        },
      );

      it("the retention purge skips a row another transaction holds instead of waiting for it (so it is never in a deadlock)", async () => {
        const ep = "old";
        // Finished long ago, with their attempts. The rules compare the ids, UUIDv7s, with the
        // period's floor: these sort before any.
        const ids = ["00-old-1a", "00-old-2x", "00-old-3b"];
        const attemptId = (id: string) => `00-attempt-${id}`;
        await q.insertDeliveries(ids.map((id, i) => ({ ...delivery(id, ep, i), status: "succeeded" as const, next_attempt_at: null })));
        await db("webhook_attempts").insert(ids.map((id) => ({ ...write(id, ep, "l", true, at(5)).attempt, id: attemptId(id) })));
        const purger = createPurger(db, webhookHistoryRules(3600).slice(0, 2), { batchRows: 100 });
        const purge = () => purger.purge(new Date(Date.parse(T0) + 365 * 86_400_000));
        const blocker = isPostgres(db) ? await db.transaction() : undefined;
        try {
          await blocker?.("webhook_deliveries").where({ id: ids[1] }).forUpdate().select("id");
          await blocker?.("webhook_attempts")
            .where({ id: attemptId(ids[1]!) })
            .forUpdate()
            .select("id");
          const timeout = new Promise<"waited">((r) => setTimeout(() => r("waited"), 5000).unref());
          await expect(Promise.race([purge(), timeout])).resolves.not.toBe("waited");
          if (blocker) {
            expect((await deliveries(ep)).map((r) => r.id)).toEqual([ids[1]]);
            expect((await attempts(ep)).map((r) => r.delivery_id)).toEqual([ids[1]]);
          }
        } finally {
          await blocker?.commit();
        }
        // What was skipped goes with a later run.
        await purge();
        expect(await deliveries(ep)).toEqual([]);
        expect(await attempts(ep)).toEqual([]);
      });

      it.skipIf(service !== "identity")(
        "a purge batch over many endpoints' attempts and a record batch over two of them: their counters are locked in key order, both succeed, every count exact",
        async () => {
          // Endpoints k1 < m < k2, whose counters lie in the table as k2, m, k1, after a few thousand
          // others: the purge's trigger then finds its counters by scanning the table.
          const [k1, m, k2] = ["cnt-1", "cnt-2", "cnt-3"];
          const old = (ep: string, i: number) => ({ ...write(`${ep}-${i}`, ep, "l", true, at(5)).attempt, id: `00-cnt-${ep}-${i}` });
          if (isPostgres(db)) {
            await db.raw(
              `INSERT INTO webhook_attempts (id, delivery_id, endpoint_id, event_id, event_type, attempt_number, trigger, success, duration_ms, attempted_at)
                 SELECT 'zz-' || i, 'zz-' || i, 'zz-' || lpad(i::text, 5, '0'), 'e', 'x', 1, 'event', true, 1, ? FROM generate_series(1, 2000) i`,
              [T0],
            );
          }
          for (const ep of [k2, m, k1]) await db("webhook_attempts").insert([old(ep, 1), old(ep, 2)]);
          if (isPostgres(db)) await db.raw("ANALYZE");
          await q.insertDeliveries([delivery(`${k1}-d`, k1, 1), delivery(`${k2}-d`, k2, 2)]);
          expect(await q.claimDue(at(10), at(60), "cnt-lease", 10)).toHaveLength(2);
          const purger = createPurger(db, webhookHistoryRules(3600).slice(0, 1), { batchRows: 100 });
          const results = await interleave(
            (trx) => trx("webhook_attempt_counts").where({ endpoint_id: m }),
            [
              () => purger.purge(new Date(Date.parse(T0) + 365 * 86_400_000)),
              () => q.recordAttempts([write(`${k2}-d`, k2, "cnt-lease", true), write(`${k1}-d`, k1, "cnt-lease", true)], at(100)),
            ],
          );
          fulfilled(results);
          for (const ep of [k1, m, k2]) {
            const counted = await db("webhook_attempt_counts").where({ endpoint_id: ep }).first();
            const rows = (await attempts(ep)).length;
            expect([ep, Number(counted?.attempts ?? 0)]).toEqual([ep, rows]);
            expect([ep, rows]).toEqual([ep, ep === m ? 0 : 1]);
          }
        },
      );
    });
  }
}
