/** Email's delivery history total is a per-endpoint counter kept by triggers (flat at 10⁶ deliveries), exact through inserts and deletes. */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { migrations } from "../handlers/email/storage/migrations/index.ts";
import { openDatabase } from "../server/storage/db.ts";
import { createDeliveryRecords } from "../server/webhooks/delivery-records.ts";
import { createDeliveryQueries, type DeliveryRow } from "../server/webhooks/store.ts";
import { pendingDelivery } from "./webhook-delivery-rows.ts";

const dir = mkdtempSync(join(tmpdir(), "delivery-counts-"));
const db = await openDatabase({ service: "email", databaseUrl: undefined, dataDir: dir, migrations });
afterAll(async () => {
  await db.destroy();
  rmSync(dir, { recursive: true, force: true });
});

const at = "2026-01-01T00:00:00.000Z";
const delivery = (id: string, endpointId: string): DeliveryRow => pendingDelivery(id, endpointId, at, "email.sent");

describe("email delivery history total", () => {
  it("reads a counter that inserts, deletes and an endpoint's deletion keep exact", async () => {
    const q = createDeliveryQueries(db);
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
    expect(await db("webhook_delivery_counts").where({ endpoint_id: "A" }).first()).toBeUndefined();
  });
});
