/**
 * X-EM-6 on PostgreSQL with several instances: the message's status is derived from its copies in
 * the transaction that changes one of them (setDerivedStatus). Two instances recording the outcomes of two
 * copies of one message at the same time must not leave a stale message status behind (READ
 * COMMITTED: each would otherwise read the other copy as it was before). PostgreSQL only: SQLite
 * has one writer at a time. PostgreSQL: CONFORMANCE_DATABASE_URL, or a throwaway cluster from
 * scripts/postgres.sh.
 */
import { postgresDatabase } from "../support/postgres-database.ts";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { systemClock } from "../../server/clock.ts";
import { openDatabase, type Database } from "../../server/storage/db.ts";
import type { Tx } from "../../server/storage/transaction.ts";
import { createApiKeys } from "../../handlers/email/domain/api-keys.ts";
import { createMessages } from "../../handlers/email/domain/messages.ts";
import { createSuppressions } from "../../handlers/email/domain/suppressions.ts";
import { messageStatus } from "../../handlers/email/domain/status.ts";
import { createEmailStorage } from "../../handlers/email/storage/index.ts";
import { migrations } from "../../handlers/email/storage/migrations/index.ts";

const cleanups: Array<() => unknown> = [];
let db: Database;

beforeAll(async () => {
  const dir = mkdtempSync(join(tmpdir(), "email-status-pg-"));
  cleanups.unshift(() => rmSync(dir, { recursive: true, force: true }));
  const databaseUrl = await postgresDatabase(dir, "email_status", (c) => cleanups.unshift(c));
  db = await openDatabase({ service: "email", databaseUrl, dataDir: dir, migrations });
  cleanups.unshift(() => db.destroy());
}, 60_000);

afterAll(async () => {
  for (const f of cleanups) await f();
});

/** Resolves once some statement waits for a row lock (the second writer is blocked). */
async function someoneWaitsForALock(): Promise<void> {
  for (let i = 0; i < 500; i++) {
    const { rows } = await db.raw("SELECT count(*)::int AS n FROM pg_locks WHERE NOT granted");
    if (rows[0].n > 0) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error("the second writer never waited");
}

it("X-EM-6 two copies of one message delivered by two concurrent transactions: the message ends Delivered, not the status one of them read before the other committed", async () => {
  const storage = createEmailStorage(db);
  const queries = storage.messages;
  const { row } = await createApiKeys(storage.apiKeys, systemClock).create({ name: "status" });
  const messages = createMessages({
    clock: systemClock,
    queries,
    suppressions: createSuppressions(storage.suppressions, systemClock),
    transports: { relay: true, sink: false, sendingDomains: new Set(["acme.test"]) },
    trackingBaseUrl: "https://t.acme.test",
    planHtml: async () => {
      throw new Error("no HTML in this test");
    },
    queued: () => {},
  });
  const { email } = await messages.send(
    { apiKeyId: row.id, permission: "full_access", test: false },
    { from: "a@acme.test", to: ["x@example.net", "y@example.net"], subject: "S", text: "T" },
    undefined,
  );
  const [x, y] = await queries.recipientsOf(email.id);
  const at = new Date().toISOString();

  // Instance 1 records x as Delivered and has not committed yet; instance 2 records y meanwhile.
  const delivered = (copy: typeof x, tx: Tx) =>
    queries.moveRecipient(copy!.id, { status: copy!.status, leaseToken: copy!.lease_token }, { status: "Delivered" }, tx);
  const first = await db.transaction();
  expect(await delivered(x, first)).toBe(true);
  await queries.setDerivedStatus(email.id, at, messageStatus, first);
  const second = await db.transaction();
  expect(await delivered(y, second)).toBe(true);
  const touching = queries.setDerivedStatus(email.id, at, messageStatus, second);
  await someoneWaitsForALock();
  await first.commit();
  await touching;
  await second.commit();

  expect((await queries.findEmail(email.id))!.status).toBe("Delivered");
});
