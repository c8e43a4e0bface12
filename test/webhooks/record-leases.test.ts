/**
 * Record batches in flight at the same time for the same delivery (a lease that ran out and a new
 * holder, two instances, or a batch written twice): only the write whose lease the delivery still
 * holds changes it, once; every attempt is history, the others without a next attempt. On SQLite and
 * PostgreSQL (CONFORMANCE_DATABASE_URL, or a throwaway cluster from scripts/postgres.sh), where the
 * batches run on separate connections of the pool and the UPDATE that waited re-checks the token.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openDatabase, type Database } from "../../server/storage/db.ts";
import { createDeliveryTables, dropDeliveryTables } from "../../server/webhooks/index.ts";
import type { AttemptWrite } from "../../server/webhooks/storage/deliveries.ts";
import { createDeliveryStore } from "../../server/webhooks/storage/index.ts";
import { postgresDatabase } from "../support/postgres-database.ts";
import { firstAttempt, pendingDelivery } from "./delivery-rows.ts";

const dir = mkdtempSync(join(tmpdir(), "record-leases-"));
const cleanups: Array<() => void | Promise<void>> = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  rmSync(dir, { recursive: true, force: true });
});

const write = (id: string, leaseToken: string, success: boolean, at: string): AttemptWrite => ({
  leaseToken,
  attempt: firstAttempt({ id: `a-${id}-${leaseToken}`, deliveryId: id, success, at, retryAt: "2026-01-01T01:00:00.000Z" }),
  delivery: {
    status: success ? "succeeded" : "pending",
    attemptsMade: 1,
    nextAttemptAt: success ? null : "2026-01-01T01:00:00.000Z",
    nextTrigger: "retry",
  },
});

for (const storage of ["sqlite", "postgres"] as const) {
  describe(`record batches in flight (${storage})`, () => {
    let db: Database;
    beforeAll(async () => {
      const databaseUrl = storage === "postgres" ? await postgresDatabase(dir, "record_leases", (c) => void cleanups.push(c)) : undefined;
      db = await openDatabase({
        service: "record_leases",
        databaseUrl,
        dataDir: join(dir, storage),
        migrations: { "0001_engine": { up: createDeliveryTables, down: dropDeliveryTables } },
      });
      cleanups.push(() => db.destroy());
    });

    it("two batches in flight for the same delivery: only the lease holder's changes it, both attempts are history", async () => {
      const q = createDeliveryStore(db);
      await q.insertDeliveries([pendingDelivery("d1", "ep", "2026-01-01T00:00:00.000Z")]);
      // Claimed under lease-a, which ran out; claimed again under lease-b.
      expect(await q.claimDue("2026-01-01T00:00:01.000Z", "2026-01-01T00:01:00.000Z", "lease-a", 10)).toHaveLength(1);
      expect(await q.claimDue("2026-01-01T00:02:00.000Z", "2026-01-01T00:03:00.000Z", "lease-b", 10)).toHaveLength(1);
      const at = "2026-01-01T00:02:01.000Z";
      // The old holder's failure and the new holder's success land at the same time, and twice
      // the new holder's (which the engine never sends, but a second batch must not apply it again).
      await Promise.all([
        q.recordAttempts([write("d1", "lease-a", false, at)], at),
        q.recordAttempts([write("d1", "lease-b", true, at)], at),
        q.recordAttempts(
          [{ ...write("d1", "lease-b", false, at), attempt: { ...write("d1", "lease-b", false, at).attempt, id: "a-d1-again" } }],
          at,
        ),
      ]);
      const delivery = await db("webhook_deliveries").where({ id: "d1" }).first();
      expect([Number(delivery.attempts_made), delivery.lease_token, delivery.lease_expires_at]).toEqual([1, null, null]);
      const attempts = await db("webhook_attempts").where({ delivery_id: "d1" }).orderBy("id");
      expect(attempts).toHaveLength(3);
      // lease-a's never applied; exactly one of lease-b's two did, and the delivery's state is that one's.
      expect(attempts.find((a) => a.id === "a-d1-lease-a")?.next_attempt_at).toBeNull();
      const again = attempts.find((a) => a.id === "a-d1-again")?.next_attempt_at;
      if (delivery.status === "succeeded") expect([again, delivery.next_attempt_at]).toEqual([null, null]);
      else
        expect([delivery.status, again, delivery.next_attempt_at]).toEqual([
          "pending",
          "2026-01-01T01:00:00.000Z",
          "2026-01-01T01:00:00.000Z",
        ]);
      await q.close();
    });
  });
}
