/** The dispatcher's SQLite writes on their own thread (server/webhooks/sqlite-dispatch-thread.ts): same rules, same durability. */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { openDatabase } from "../../server/storage/db.ts";
import { assertSynchronousFull } from "../../server/storage/sqlite-settings.ts";
import { startDispatchThread } from "../../server/webhooks/sqlite-dispatch-thread.ts";
import { createDeliveryStore } from "../../server/webhooks/storage/index.ts";
import { createDeliveryTables, dropDeliveryTables } from "../../server/webhooks/storage/migrations/webhook-tables.ts";
import type { DeliveryRow } from "../../server/webhooks/storage/schema.ts";
import { firstAttempt, pendingDelivery } from "./delivery-rows.ts";

const dir = mkdtempSync(join(tmpdir(), "dispatch-thread-"));
const db = await openDatabase({
  service: "dispatch",
  databaseUrl: undefined,
  dataDir: dir,
  migrations: { "0001_engine": { up: createDeliveryTables, down: dropDeliveryTables } },
});
afterAll(async () => {
  await db.destroy();
  rmSync(dir, { recursive: true, force: true });
});

const at = "2026-01-01T00:00:00.000Z";
const delivery = (id: string): DeliveryRow => pendingDelivery(id, "ep", at);

describe("webhook dispatch thread (SQLite)", () => {
  it("claims under a lease and records outcomes that the service's own connection reads once the promise settles", async () => {
    const q = createDeliveryStore(db);
    // d3 due first, so that it is the one a claim of one takes once the leases end.
    await q.insertDeliveries([delivery("d1"), delivery("d2"), { ...delivery("d3"), next_attempt_at: "2025-12-31T00:00:00.000Z" }]);
    const now = "2026-01-01T00:00:01.000Z";
    const claimed = await q.claimDue(now, "2026-01-01T00:10:00.000Z", "lease-a", 10);
    expect(claimed.map((r) => r.id).sort()).toEqual(["d1", "d2", "d3"]);
    // Leased: a second dispatcher finds nothing due until the lease ends.
    expect(await q.claimDue(now, "2026-01-01T00:10:00.000Z", "lease-b", 10)).toEqual([]);
    expect((await q.claimDue("2026-01-01T00:10:00.000Z", "2026-01-01T00:20:00.000Z", "lease-c", 1)).length).toBe(1);

    const attempt = (id: string, success: boolean) =>
      firstAttempt({ id: `a-${id}`, deliveryId: id, success, at: now, retryAt: "2026-01-01T00:01:00.000Z" });
    const leaseOf = async (id: string) => (await db("webhook_deliveries").where({ id }).first()).lease_token as string;
    await q.recordAttempts(
      [
        {
          leaseToken: await leaseOf("d1"),
          attempt: attempt("d1", true),
          delivery: { status: "succeeded", attemptsMade: 1, nextAttemptAt: null, nextTrigger: "retry" },
        },
        {
          leaseToken: await leaseOf("d2"),
          attempt: attempt("d2", false),
          delivery: { status: "pending", attemptsMade: 1, nextAttemptAt: "2026-01-01T00:01:00.000Z", nextTrigger: "retry" },
        },
        // A lease that is no longer held: the attempt is recorded, the delivery left alone.
        {
          leaseToken: "lease-a",
          attempt: attempt("d3", true),
          delivery: { status: "succeeded", attemptsMade: 1, nextAttemptAt: null, nextTrigger: "retry" },
        },
      ],
      now,
    );
    const rows = await db("webhook_deliveries").orderBy("id");
    expect(rows.map((r) => [r.id, r.status, Number(r.attempts_made), r.lease_token])).toEqual([
      ["d1", "succeeded", 1, null],
      ["d2", "pending", 1, null],
      ["d3", "pending", 0, "lease-c"],
    ]);
    const attempts = await db("webhook_attempts").orderBy("id");
    expect(attempts.map((a) => [a.delivery_id, a.next_attempt_at])).toEqual([
      ["d1", null],
      ["d2", "2026-01-01T00:01:00.000Z"],
      ["d3", null],
    ]);
    await q.close();
  });

  it("refuses to write through a connection that does not read back synchronous=FULL", async () => {
    const filename = join(dir, "dispatch.sqlite");
    const thread = startDispatchThread(filename, ["synchronous = NORMAL"], (v) => assertSynchronousFull(v, "the test's thread"));
    await expect(thread.claimDue(at, at, "t", 1)).rejects.toThrow(/not FULL/);
    await thread.stop();
  });
});
