/**
 * The email storage of X-EM-27 (test and live apart) and X-EM-4 (an Idempotency-Key per API key),
 * on SQLite and PostgreSQL: migration 0010 on a database with data keeps every Idempotency-Key
 * (now its message's API key's) and every suppression (on the list of the message that caused
 * it; manual ones live); and the reads of one mode (message lists and their totals, suppression
 * lists, the suppression checks at acceptance and before each attempt) search an index, with no
 * sort.
 */
import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { migrations } from "../../handlers/email/storage/migrations/index.ts";
import { createEmailStorage } from "../../handlers/email/storage/index.ts";
import { SUPPRESSION_STATEMENTS } from "../../handlers/email/storage/sqlite/suppressions.ts";
import type { SuppressionReason } from "../../handlers/email/storage/suppressions.ts";
import { plannerSafe } from "../../server/storage/sqlite/statements.ts";
import { isUniqueViolation } from "../../server/storage/transaction.ts";
import { messageRow } from "./rows.ts";
import { openServiceDb, type StorageKind } from "../support/storage-fixtures.ts";
import { planOf, plansOf } from "../support/query-plans.ts";

const AT = "2026-06-01T00:00:00.000Z";

const suppression = (o: { key: string; reason: SuppressionReason; emailId?: string }) => ({
  address_key: o.key,
  address: o.key,
  reason: o.reason,
  email_id: o.emailId ?? null,
  detail: null,
  created_at: AT,
});

describe.each<StorageKind>(["sqlite", "postgres"])("email modes storage on %s", (kind) => {
  it("X-EM-27 X-EM-4 0010 on a database with data: each Idempotency-Key takes its message's API key, each suppression its message's mode (manual ones live)", async () => {
    const before0010 = Object.fromEntries(Object.entries(migrations).filter(([name]) => name < "0010"));
    const t = await openServiceDb(kind, "email", before0010);
    try {
      const { db } = t;
      const live = randomUUID();
      const test = randomUUID();
      await db("emails").insert({ ...messageRow({ id: live, status: "Delivered", at: AT }), api_key_id: "live-key" });
      await db("emails").insert({ ...messageRow({ id: test, status: "Complained", at: AT }), api_key_id: "test-key", test_mode: true });
      await db("idempotency_keys").insert([
        { key: "order-1", request_hash: "a".repeat(64), email_id: live, created_at: AT },
        { key: "order-2", request_hash: "b".repeat(64), email_id: test, created_at: AT },
      ]);
      await db("suppressions").insert([
        suppression({ key: "complained@simulator.test", reason: "complaint", emailId: test }),
        suppression({ key: "bounced@example.com", reason: "hard_bounce", emailId: live }),
        suppression({ key: "manual@example.com", reason: "manual" }),
        suppression({ key: "purged@example.com", reason: "hard_bounce", emailId: randomUUID() }),
      ]);

      await t.migrateTo(migrations);

      const keys = await db("idempotency_keys").orderBy("key").select("api_key_id", "key", "email_id");
      expect(keys).toEqual([
        { api_key_id: "live-key", key: "order-1", email_id: live },
        { api_key_id: "test-key", key: "order-2", email_id: test },
      ]);
      const lists = (await db("suppressions").orderBy("address_key").select("address_key", "test_mode")).map((r) => [
        r.address_key,
        Boolean(r.test_mode),
      ]);
      expect(lists).toEqual([
        ["bounced@example.com", false],
        ["complained@simulator.test", true],
        ["manual@example.com", false],
        ["purged@example.com", false],
      ]);

      // Another API key's use of a value is another entry; one API key's second use is refused.
      const third = randomUUID();
      await db("emails").insert({ ...messageRow({ id: third, status: "Queued", at: AT }), api_key_id: "test-key" });
      await db("idempotency_keys").insert({
        api_key_id: "test-key",
        key: "order-1",
        request_hash: "c".repeat(64),
        email_id: third,
        created_at: AT,
      });
      const again = await db("idempotency_keys")
        .insert({ api_key_id: "live-key", key: "order-1", request_hash: "c".repeat(64), email_id: third, created_at: AT })
        .then(
          () => undefined,
          (err: unknown) => err,
        );
      expect(isUniqueViolation(again)).toBe(true);
      // An address may be on both lists, each entry its own.
      const q = createEmailStorage(db).suppressions;
      expect(await q.insertIfAbsent({ ...suppression({ key: "manual@example.com", reason: "manual" }), test_mode: true })).toBe(true);
      expect(await q.insertIfAbsent({ ...suppression({ key: "manual@example.com", reason: "manual" }), test_mode: true })).toBe(false);
      expect((await q.among(true, ["manual@example.com", "bounced@example.com"])).map((r) => r.address_key)).toEqual([
        "manual@example.com",
      ]);
      expect((await q.ofCopy(test, "complained@simulator.test"))?.reason).toBe("complaint");
      expect(await q.ofCopy(live, "complained@simulator.test")).toBeUndefined();
      // Deleting a message still deletes its key (the cascade through idempotency_keys_by_email).
      await db("emails").where({ id: third }).delete();
      expect(await db("idempotency_keys").where({ email_id: third }).first()).toBeUndefined();
    } finally {
      await t.close();
    }
  }, 120_000);

  it("X-EM-27 one mode's message lists, their totals, its suppression list and the suppression checks search an index, with no sort", async () => {
    const t = await openServiceDb(kind, "email", migrations);
    try {
      const { db } = t;
      const { messages, suppressions } = createEmailStorage(db);
      const reads: Array<[string, () => Promise<unknown>, RegExp]> = [
        ["listEmails", () => messages.listEmails({ testMode: true }, 2, 20), /emails_by_mode\b/],
        ["listEmails by status", () => messages.listEmails({ testMode: false, status: "Bounced" }, 1, 20), /emails_by_mode_status/],
        ["suppression list", () => suppressions.list(true, undefined, 1, 20), /suppressions_recent/],
        ["suppression list by reason", () => suppressions.list(false, "complaint", 1, 20), /suppressions_recent/],
        ["among", () => suppressions.among(false, ["a@example.com", "b@example.com"]), /suppressions_pkey|PRIMARY KEY/],
      ];
      if (kind === "postgres") reads.push(["ofCopy", () => suppressions.ofCopy(randomUUID(), "a@example.com"), /suppressions_pkey/]);
      for (const [name, read, index] of reads) {
        // A list is its page and its total: the page walks the index in order; the total may count any index's entries.
        const plans = await plansOf(db, read);
        expect(plans.join(" || "), name).toMatch(index);
        for (const plan of plans) expect(plan, name).not.toMatch(/TEMP B-TREE|Sort|Seq Scan|SCAN suppressions|SCAN emails/);
      }
      if (kind === "sqlite") {
        // As prepared: the layer writes each bound `= ?` as `= +?`.
        for (const [name, sql] of Object.entries(SUPPRESSION_STATEMENTS)) {
          const plan = await planOf(db, plannerSafe(sql), name === "ofCopy" ? ["m", "a@example.com"] : [0, "a@example.com"]);
          expect(plan, name).toMatch(/SEARCH s(uppressions)? USING PRIMARY KEY \(test_mode=\? AND address_key=\?\)/);
          expect(plan, name).not.toMatch(/SCAN/);
        }
      }
    } finally {
      await t.close();
    }
  }, 120_000);
});
