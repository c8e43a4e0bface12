/**
 * The email service's retention (handlers/email/storage/retention-rules.ts, X-EM-25) on SQLite and
 * PostgreSQL: finished messages past their period go with everything that hangs off them, messages
 * whose copies still wait stay whatever their age, recent ones stay; Idempotency-Key entries go
 * after their 24-hour window; the webhook history after its own period. And every rule, and every
 * cascade a deleted message sets off, finds its rows through an index.
 */
import { randomUUID } from "node:crypto";
import type { Knex } from "knex";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { migrations } from "../handlers/email/storage/migrations/index.ts";
import { emailRetentionRules } from "../handlers/email/storage/retention-rules.ts";
import { loadConfig } from "../server/config.ts";
import type { Database } from "../server/storage/db.ts";
import { batchSelect, createPurger } from "../server/storage/retention.ts";
import { uuidv7Floor } from "../server/webhooks/ids.ts";
import { pendingDelivery } from "./webhook-delivery-rows.ts";
import { openServiceDb, type StorageKind } from "./identity-storage-fixtures.ts";

const NOW = Date.parse("2026-06-01T00:00:00.000Z");
const DAY = 24 * 3600 * 1000;
const ago = (ms: number) => new Date(NOW - ms).toISOString();
const config = loadConfig({});
const rules = emailRetentionRules(config);
const MESSAGES_MS = config.EMAIL_RETENTION_MESSAGES_SECONDS * 1000;
const HISTORY_MS = config.EMAIL_RETENTION_WEBHOOK_HISTORY_SECONDS * 1000;
/** A UUIDv7 of millisecond `ms` (the service's generator never goes back in time, so it cannot make old ones). */
const idAt = (ms: number) => uuidv7Floor(ms).slice(0, 24) + randomUUID().slice(24);

const openEmailDb = (kind: StorageKind) => openServiceDb(kind, "email", migrations);

/** A message with one copy, a tracked link, a timeline event, an attachment and, if asked, an idempotency key. */
async function seedMessage(db: Knex, status: string, createdAt: string, idempotencyKey?: { key: string; at: string }): Promise<string> {
  const id = randomUUID();
  const copy = randomUUID();
  await db("emails").insert({
    id,
    api_key_id: "k",
    from_address: "from@example.com",
    subject: "Hello",
    text: "Hi",
    reply_to: "[]",
    headers: "{}",
    tags: "[]",
    metadata: "{}",
    track_opens: false,
    track_clicks: true,
    test_mode: false,
    status,
    created_at: createdAt,
    updated_at: createdAt,
  });
  await db("email_recipients").insert({
    id: copy,
    email_id: id,
    position: 0,
    address: "to@example.com",
    address_key: "to@example.com",
    status,
    transport: "smtp",
    message_id: `<${copy}@example.com>`,
    return_token: copy.replaceAll("-", ""),
    open_token: `o${copy.replaceAll("-", "")}`.slice(0, 40),
    updated_at: createdAt,
  });
  await db("email_links").insert({
    token: `l${copy.replaceAll("-", "")}`.slice(0, 40),
    recipient_id: copy,
    position: 0,
    url: "https://a.example",
  });
  await db("email_events").insert({
    id: randomUUID(),
    email_id: id,
    recipient_id: copy,
    type: "email.sent",
    data: "{}",
    created_at: createdAt,
  });
  await db("email_attachments").insert({
    email_id: id,
    position: 0,
    size: 2,
    filename: "a.txt",
    content_type: "text/plain",
    content: "aGk=",
  });
  if (idempotencyKey)
    await db("idempotency_keys").insert({
      key: idempotencyKey.key,
      request_hash: "h".repeat(64),
      email_id: id,
      created_at: idempotencyKey.at,
    });
  return id;
}

const count = async (db: Knex, table: string, where: Record<string, string> = {}) =>
  Number(((await db(table).where(where).count({ n: "*" }).first()) as { n: number | string }).n);

describe.each<StorageKind>(["sqlite", "postgres"])("email retention on %s", (kind) => {
  let t: { db: Database; close(): Promise<void> };
  beforeAll(async () => {
    t = await openEmailDb(kind);
  }, 120_000);
  afterAll(async () => t?.close());

  it("X-EM-25 deletes finished messages past their period with their copies, links, timeline, attachments and key; keeps the rest", async () => {
    const { db } = t;
    const old = ago(MESSAGES_MS + DAY);
    const gone = await Promise.all(["Delivered", "Bounced", "Failed", "Suppressed", "Complained"].map((s) => seedMessage(db, s, old)));
    const withKey = await seedMessage(db, "Delivered", old, { key: "old-key", at: old });
    const waiting = await Promise.all(["Queued", "Sent"].map((s) => seedMessage(db, s, old)));
    const recent = await seedMessage(db, "Delivered", ago(MESSAGES_MS - DAY), { key: "recent-key", at: ago(DAY / 2) });
    const keyExpired = await seedMessage(db, "Delivered", ago(2 * DAY), { key: "expired-key", at: ago(DAY + 1000) });

    // Webhook history: one of each kind past the period and one within; an old pending delivery stays.
    const endpoint = randomUUID();
    const oldId = idAt(NOW - HISTORY_MS - DAY);
    const newId = idAt(NOW - HISTORY_MS + DAY);
    const oldPendingId = idAt(NOW - HISTORY_MS - 2 * DAY);
    const delivery = (id: string, at: string, status: string) => ({
      ...pendingDelivery(id, endpoint, at, "email.sent"),
      event_id: id,
      status,
      next_attempt_at: status === "pending" ? at : null,
    });
    await db("webhook_deliveries").insert([
      delivery(oldId, ago(HISTORY_MS + DAY), "succeeded"),
      delivery(newId, ago(HISTORY_MS - DAY), "succeeded"),
      delivery(oldPendingId, ago(HISTORY_MS + 2 * DAY), "pending"),
    ]);
    const attempt = (id: string, deliveryId: string, at: string) => ({
      id,
      delivery_id: deliveryId,
      endpoint_id: endpoint,
      event_id: deliveryId,
      event_type: "email.sent",
      attempt_number: 1,
      trigger: "event",
      status_code: 204,
      success: true,
      duration_ms: 3,
      attempted_at: at,
    });
    await db("webhook_attempts").insert([attempt(oldId, oldId, ago(HISTORY_MS + DAY)), attempt(newId, newId, ago(HISTORY_MS - DAY))]);
    await db("webhook_events").insert([
      { id: randomUUID(), type: "email.sent", data: "{}", created_at: ago(HISTORY_MS + DAY) },
      { id: randomUUID(), type: "email.sent", data: "{}", created_at: ago(HISTORY_MS - DAY) },
    ]);

    const batches: number[] = [];
    const deleted = await createPurger(db, rules, { batchRows: 2, onBatch: (_rule, rows) => batches.push(rows) }).purge(new Date(NOW));
    expect(deleted).toEqual({
      messages: gone.length + 1,
      "idempotency keys": 1,
      "webhook attempts": 1,
      "webhook deliveries": 1,
      "webhook events": 1,
    });
    expect(Math.max(...batches)).toBeLessThanOrEqual(2);

    for (const id of [...gone, withKey]) {
      expect(await count(db, "emails", { id })).toBe(0);
      for (const table of ["email_recipients", "email_events", "email_attachments", "idempotency_keys"])
        expect(await count(db, table, { email_id: id }), table).toBe(0);
    }
    expect(await count(db, "email_links")).toBe(waiting.length + 2);
    for (const id of [...waiting, recent, keyExpired]) expect(await count(db, "emails", { id })).toBe(1);
    expect((await db("idempotency_keys").pluck("key")).sort()).toEqual(["recent-key"]);
    expect((await db("webhook_deliveries").pluck("id")).sort()).toEqual([oldPendingId, newId].sort());
    expect(await db("webhook_attempts").pluck("id")).toEqual([newId]);
    expect(await count(db, "webhook_events")).toBe(1);

    // A second run finds nothing left to do.
    expect(Object.values(await createPurger(db, rules, { batchRows: 2 }).purge(new Date(NOW))).every((n) => n === 0)).toBe(true);
  });
});

describe("email retention query plans", () => {
  it("SQLite: every rule's batch and every cascade of a deleted message search an index, with no sort", async () => {
    const t = await openEmailDb("sqlite");
    try {
      const plan = async (sql: string, bindings: readonly unknown[]) =>
        ((await t.db.raw(`EXPLAIN QUERY PLAN ${sql}`, bindings as Knex.RawBinding[])) as Array<{ detail: string }>)
          .map((r) => r.detail)
          .join(" | ");
      for (const rule of rules) {
        const q = batchSelect(t.db, rule, new Date(NOW), config.EMAIL_RETENTION_BATCH_ROWS).toSQL();
        const steps = await plan(q.sql, q.bindings);
        expect(steps, rule.name).toMatch(/^SEARCH \w+ USING (COVERING )?INDEX|^SEARCH \w+ USING PRIMARY KEY/);
        expect(steps, rule.name).not.toMatch(/TEMP B-TREE/);
      }
      const children = (await t.db.raw(
        "SELECT m.name AS child, f.\"from\" AS col FROM sqlite_master m JOIN pragma_foreign_key_list(m.name) f WHERE m.type = 'table'",
      )) as Array<{ child: string; col: string }>;
      expect(children.map((c) => `${c.child}.${c.col}`)).toEqual(
        expect.arrayContaining(["email_recipients.email_id", "email_links.recipient_id", "idempotency_keys.email_id"]),
      );
      for (const { child, col } of children)
        expect(await plan(`DELETE FROM ${child} WHERE ${col} = ?`, ["x"]), `${child}.${col}`).toMatch(
          /^SEARCH \w+ USING (COVERING )?INDEX \w+ \(\w+=\?|^SEARCH \w+ USING PRIMARY KEY \(\w+=\?/,
        );
      // The delivery history reads the listed deliveries' attempts by their delivery.
      expect(await plan("SELECT * FROM webhook_attempts WHERE delivery_id IN (?, ?)", ["a", "b"])).toMatch(
        /USING INDEX webhook_attempts_by_delivery/,
      );
    } finally {
      await t.close();
    }
  });

  it("PostgreSQL: every rule's batch and every cascade of a deleted message use an index, with no sort", async () => {
    const t = await openEmailDb("postgres");
    try {
      const plan = (sql: string, bindings: readonly unknown[]) =>
        t.db.transaction(async (trx) => {
          await trx.raw("SET LOCAL enable_seqscan = off");
          await trx.raw("SET LOCAL enable_bitmapscan = off");
          const rows = (await trx.raw(`EXPLAIN ${sql}`, bindings as Knex.RawBinding[])) as { rows: Array<{ "QUERY PLAN": string }> };
          return rows.rows.map((r) => r["QUERY PLAN"]).join(" | ");
        });
      for (const rule of rules) {
        const q = batchSelect(t.db, rule, new Date(NOW), config.EMAIL_RETENTION_BATCH_ROWS).toSQL();
        const nodes = await plan(q.sql, q.bindings);
        expect(nodes, rule.name).toMatch(/Index (Only )?Scan/);
        expect(nodes, rule.name).not.toMatch(/Seq Scan|Sort/);
      }
      const children = (
        (await t.db.raw(`SELECT c.conrelid::regclass::text AS child, a.attname AS col
                           FROM pg_constraint c JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = c.conkey[1]
                          WHERE c.contype = 'f' AND c.connamespace = current_schema()::regnamespace`)) as {
          rows: Array<{ child: string; col: string }>;
        }
      ).rows;
      expect(children.map((c) => `${c.child}.${c.col}`)).toEqual(
        expect.arrayContaining(["email_recipients.email_id", "idempotency_keys.email_id"]),
      );
      for (const { child, col } of children) {
        const nodes = await plan(`DELETE FROM ${child} WHERE ${col} = ?`, ["x"]);
        expect(nodes, `${child}.${col}`).toMatch(/Index (Only )?Scan/);
        expect(nodes, `${child}.${col}`).not.toMatch(/Seq Scan/);
      }
    } finally {
      await t.close();
    }
  }, 120_000);
});
