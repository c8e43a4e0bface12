/**
 * Email's delivery history total without counting the rows (flat at 10⁶ deliveries), exact
 * through inserts and deletes: on SQLite a per-endpoint counter kept by triggers; on PostgreSQL
 * the sum of per-endpoint delta rows (server/webhooks/storage/migrations/delivery-count-deltas.ts),
 * which must also stay exact under concurrent enqueues, deletions and folds, never make one
 * enqueueing transaction wait for another (the counter row did, and deadlocked outboxes), and stay
 * few per endpoint.
 * PostgreSQL: CONFORMANCE_DATABASE_URL, or a throwaway cluster from scripts/postgres.sh.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Knex } from "knex";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { migrations } from "../../handlers/email/storage/migrations/index.ts";
import { openDatabase } from "../../server/storage/db.ts";
import { createRowCounter } from "../../server/storage/count-triggers.ts";
import { createDeliveryRecords, createDeliveryStore } from "../../server/webhooks/storage/index.ts";
import { DELTAS, FOLD_ONE_IN } from "../../server/webhooks/storage/migrations/delivery-count-deltas.ts";
import { foldDeltas } from "../../server/webhooks/storage/postgres/delivery-records.ts";
import type { DeliveryRow } from "../../server/webhooks/storage/schema.ts";
import { createDatabase, postgresServer } from "../support/postgres-database.ts";
import { pendingDelivery } from "./delivery-rows.ts";

const at = "2026-01-01T00:00:00.000Z";
const delivery = (id: string, endpointId: string): DeliveryRow => pendingDelivery(id, endpointId, at, "email.sent");

/** Inserts, deletes (one row, then an endpoint's deletion) and a status filter, through the history's own reads. */
async function insertsAndDeletes(db: Knex): Promise<void> {
  const q = createDeliveryStore(db);
  const records = createDeliveryRecords(db);
  await q.insertDeliveries([delivery("a1", "A"), delivery("a2", "A"), delivery("a3", "A"), delivery("b1", "B")]);
  expect((await records.list("A", { limit: 2 })).totalCount).toBe(3);
  expect((await records.list("B", { limit: 2 })).totalCount).toBe(1);
  await db("webhook_deliveries").where({ id: "a1" }).delete();
  expect((await records.list("A", { limit: 2 })).totalCount).toBe(2);
  await db("webhook_deliveries").where({ id: "a2" }).update({ status: "succeeded" });
  // With a status filter the total is counted from the rows.
  expect((await records.list("A", { limit: 2, status: "pending" })).totalCount).toBe(1);
  expect((await records.list("A", { limit: 2 })).totalCount).toBe(2);
  await db.transaction((trx) => q.deleteEndpoint("A", trx));
  expect((await records.list("A", { limit: 2 })).totalCount).toBe(0);
  expect((await records.list("B", { limit: 2 })).totalCount).toBe(1);
}

describe("email delivery history total, SQLite", () => {
  const dir = mkdtempSync(join(tmpdir(), "delivery-counts-"));
  let db: Knex;
  beforeAll(async () => {
    db = await openDatabase({ service: "email", databaseUrl: undefined, dataDir: dir, migrations });
  });
  afterAll(async () => {
    await db.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  it("reads a counter that inserts, deletes and an endpoint's deletion keep exact", async () => {
    await insertsAndDeletes(db);
    expect(await db("webhook_delivery_counts").where({ endpoint_id: "A" }).first()).toBeUndefined();
    expect(await db.schema.hasTable(DELTAS)).toBe(false);
  });
});

describe("email delivery history total, PostgreSQL", () => {
  const dir = mkdtempSync(join(tmpdir(), "delivery-counts-pg-"));
  const cleanups: Array<() => unknown> = [];
  let adminUrl = "";
  let db: Knex;
  beforeAll(async () => {
    const server = postgresServer(dir);
    cleanups.unshift(() => server.stop());
    adminUrl = server.adminUrl;
    const database = await createDatabase(adminUrl, "delivery_counts");
    cleanups.unshift(() => database.drop());
    db = await openDatabase({ service: "email", databaseUrl: database.url, dataDir: dir, migrations });
    cleanups.unshift(() => db.destroy());
  }, 60_000);
  afterAll(async () => {
    for (const f of cleanups) await f();
    rmSync(dir, { recursive: true, force: true });
  });

  const deltaRows = async (endpointId: string) => Number((await db(DELTAS).where({ endpoint_id: endpointId }).count({ n: "*" }))[0]!.n);
  /** The total and the rows it counts, in one statement (one snapshot): equal at every instant. */
  const totalAndCount = async (endpointId: string) => {
    const { rows } = await db.raw(
      `SELECT (SELECT coalesce(sum(n), 0) FROM ${DELTAS} WHERE endpoint_id = ?)::bigint AS total,
              (SELECT count(*) FROM webhook_deliveries WHERE endpoint_id = ?) AS counted`,
      [endpointId, endpointId],
    );
    return { total: Number(rows[0].total), counted: Number(rows[0].counted) };
  };

  it("sums delta rows that inserts, deletes and an endpoint's deletion keep exact; a deleted endpoint leaves none", async () => {
    await insertsAndDeletes(db);
    expect(await deltaRows("A")).toBe(0);
    expect(await db.schema.hasTable("webhook_delivery_counts")).toBe(false);
  });

  it("no enqueueing transaction waits for another's, nor for a fold held open, nor a fold for either", async () => {
    const q = createDeliveryStore(db);
    // Each step on its own connection may wait 1 s for a lock at most, then fails.
    const quick = <T>(fn: (trx: Knex.Transaction) => Promise<T>) =>
      db.transaction(async (trx) => {
        await trx.raw("SET LOCAL lock_timeout = '1s'");
        return fn(trx);
      });
    await q.insertDeliveries([delivery("h0", "H"), delivery("h1", "H")]);
    let release = () => {};
    const held = new Promise<void>((r) => (release = r));
    let opened = () => {};
    const open = new Promise<void>((r) => (opened = r));
    // An outbox transaction that enqueued for H and folded H's committed rows, still open.
    const first = db.transaction(async (trx) => {
      await q.insertDeliveries([delivery("h2", "H")], trx);
      await foldDeltas(trx, "H");
      opened();
      await held;
    });
    try {
      await open;
      await quick((trx) => q.insertDeliveries([delivery("h3", "H")], trx));
      await quick((trx) => foldDeltas(trx, "H"));
      await quick(async (trx) => {
        await q.insertDeliveries([delivery("h4", "H"), delivery("h5", "H")], trx);
        await foldDeltas(trx, "H");
        await trx("webhook_deliveries").where({ id: "h0" }).delete();
      });
      expect(await totalAndCount("H")).toEqual({ total: 4, counted: 4 }); // h1, h3, h4, h5: h2 is not committed yet
    } finally {
      release();
      await first;
    }
    expect(await totalAndCount("H")).toEqual({ total: 5, counted: 5 });
    expect((await createDeliveryRecords(db).list("H", { limit: 20 })).totalCount).toBe(5);
  });

  it("stays exact under concurrent enqueues, rolled-back enqueues, retention-style deletions and folds", async () => {
    const q = createDeliveryStore(db);
    const endpoints = ["C1", "C2", "C3"];
    let seq = 0;
    let failures = 0;
    const pick = <T>(xs: T[]) => xs[Math.floor(Math.random() * xs.length)]!;
    const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
    const workers = {
      /** An outbox transaction: one to three statements, each a few deliveries over the endpoints; one in five rolls back. */
      async enqueue() {
        await db
          .transaction(async (trx) => {
            for (let s = 0; s < 1 + Math.floor(Math.random() * 3); s++) {
              const rows = Array.from({ length: 1 + Math.floor(Math.random() * 4) }, () => delivery(`c${++seq}`, pick(endpoints)));
              await q.insertDeliveries(rows, trx);
              await pause(Math.random() * 3);
            }
            if (Math.random() < 0.2) throw new Error("rollback");
          })
          .catch((err: Error) => {
            if (err.message !== "rollback") throw err;
          });
      },
      /** A retention batch: up to ten of an endpoint's oldest deliveries in one DELETE. */
      async purge() {
        await db.raw(
          "DELETE FROM webhook_deliveries WHERE id IN (SELECT id FROM webhook_deliveries WHERE endpoint_id = ? ORDER BY created_at, id LIMIT 10)",
          [pick(endpoints)],
        );
      },
      /** A fold, at times in a transaction that enqueues and stays open a while. */
      async fold() {
        await db.transaction(async (trx) => {
          const endpoint = pick(endpoints);
          if (Math.random() < 0.5) await q.insertDeliveries([delivery(`c${++seq}`, endpoint)], trx);
          await foldDeltas(trx, endpoint);
          await pause(Math.random() * 10);
        });
      },
      /** The invariant, checked while everything else runs. */
      async check() {
        const { total, counted } = await totalAndCount(pick(endpoints));
        if (total !== counted) failures++;
      },
    };
    const weights: Array<[keyof typeof workers, number]> = [
      ["enqueue", 6],
      ["purge", 1],
      ["fold", 2],
      ["check", 2],
    ];
    const choose = () => {
      let r = Math.random() * 11;
      for (const [name, w] of weights) if ((r -= w) < 0) return name;
      return "enqueue";
    };
    const until = Date.now() + 4000;
    let ops = 0;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (Date.now() < until) {
          await workers[choose()]();
          ops++;
        }
      }),
    );
    expect(failures).toBe(0);
    expect(ops).toBeGreaterThan(200);
    for (const e of endpoints) {
      const { total, counted } = await totalAndCount(e);
      expect(total).toBe(counted);
      expect(counted).toBeGreaterThan(0);
      expect((await createDeliveryRecords(db).list(e, { limit: 20 })).totalCount).toBe(counted);
      await foldDeltas(db, e);
      expect(await deltaRows(e)).toBe(1);
      expect((await totalAndCount(e)).total).toBe(counted);
    }
  });

  it(`enqueues keep an endpoint's delta rows few without any reader or timer (a fold in about 1 in ${FOLD_ONE_IN} statements)`, async () => {
    const q = createDeliveryStore(db);
    let most = 0;
    for (let i = 0; i < 1000; i++) {
      await q.insertDeliveries([delivery(`d${i}`, "D")]);
      if (i % 50 === 49) most = Math.max(most, await deltaRows("D"));
    }
    // Without folds there would be 1000; a run of 400 statements without one has odds of 3 in a million.
    expect(most).toBeLessThan(400);
    expect(await totalAndCount("D")).toEqual({ total: 1000, counted: 1000 });
  });

  it("the migration counts the deliveries already there, and removes the counter an earlier 0004 made on PostgreSQL", async () => {
    const database = await createDatabase(adminUrl, "delivery_counts_migration");
    const names = Object.keys(migrations).sort();
    const before = Object.fromEntries(names.filter((n) => n < "0005").map((n) => [n, migrations[n]!]));
    const old = await openDatabase({ service: "email", databaseUrl: database.url, dataDir: dir, migrations: before });
    try {
      // What 0004 did on PostgreSQL for half an hour: the counter whose row deadlocked outboxes.
      await createRowCounter(old, {
        table: "webhook_deliveries",
        counts: "webhook_delivery_counts",
        key: "endpoint_id",
        column: "deliveries",
      });
      await createDeliveryStore(old).insertDeliveries([delivery("m1", "M"), delivery("m2", "M"), delivery("n1", "N")]);
    } finally {
      await old.destroy();
    }
    const migrated = await openDatabase({ service: "email", databaseUrl: database.url, dataDir: dir, migrations });
    try {
      const records = createDeliveryRecords(migrated);
      expect((await records.list("M", { limit: 20 })).totalCount).toBe(2);
      expect((await records.list("N", { limit: 20 })).totalCount).toBe(1);
      expect(await migrated.schema.hasTable("webhook_delivery_counts")).toBe(false);
      const { rows } = await migrated.raw("SELECT tgname FROM pg_trigger WHERE tgrelid = 'webhook_deliveries'::regclass ORDER BY tgname");
      expect(rows.map((r: { tgname: string }) => r.tgname)).toEqual([
        "webhook_deliveries_count_delta_delete",
        "webhook_deliveries_count_delta_insert",
        "webhook_deliveries_count_delta_truncate",
      ]);
      await createDeliveryStore(migrated).insertDeliveries([delivery("m3", "M")]);
      expect((await records.list("M", { limit: 20 })).totalCount).toBe(3);
    } finally {
      await migrated.destroy();
      await database.drop();
    }
  });
});
