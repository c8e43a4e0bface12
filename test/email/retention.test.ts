/**
 * The email service's retention (handlers/email/storage/retention-rules.ts, X-EM-25) on SQLite and
 * PostgreSQL: finished messages past their period go with everything that hangs off them, messages
 * whose copies still wait stay whatever their age, recent ones stay; Idempotency-Key entries go
 * after their 24-hour window; the webhook history after its own period. And every rule, and every
 * cascade a deleted message sets off, finds its rows through an index.
 */
import { randomUUID } from "node:crypto";
import { Writable } from "node:stream";
import type { Knex } from "knex";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { EventPublisher } from "../../handlers/email/domain/events.ts";
import { createOutcomes, type Outcomes } from "../../handlers/email/domain/outcomes.ts";
import { createReports } from "../../handlers/email/domain/reports.ts";
import { createClickTokens, type ClickTokens } from "../../handlers/email/domain/click-links.ts";
import type { Suppressions } from "../../handlers/email/domain/suppressions.ts";
import { createTracking, type Tracking } from "../../handlers/email/domain/tracking.ts";
import { migrations } from "../../handlers/email/storage/migrations/index.ts";
import { createEmailStorage } from "../../handlers/email/storage/index.ts";
import { MESSAGE_STATEMENTS } from "../../handlers/email/storage/sqlite/messages.ts";
import { emailRetentionRules } from "../../handlers/email/storage/retention-rules.ts";
import { emailRetentionOf } from "../../handlers/email/config.ts";
import { systemClock } from "../../server/clock.ts";
import { loadConfig } from "../../app/load-config.ts";
import type { Database } from "../../server/storage/db.ts";
import { batchSelect, createPurger } from "../../server/storage/retention.ts";
import { plannerSafe } from "../../server/storage/sqlite/statements.ts";
import { uuidv7, uuidv7Floor } from "../../server/ids.ts";
import { copyRow, messageRow } from "./rows.ts";
import { pendingDelivery } from "../webhooks/delivery-rows.ts";
import { openServiceDb, type StorageKind } from "../support/storage-fixtures.ts";
import { planOf, plansOf } from "../support/query-plans.ts";

const NOW = Date.parse("2026-06-01T00:00:00.000Z");
const DAY = 24 * 3600 * 1000;
const ago = (ms: number) => new Date(NOW - ms).toISOString();
const config = loadConfig({});
const rules = emailRetentionRules(emailRetentionOf(config).periods);
const MESSAGES_MS = config.EMAIL_RETENTION_MESSAGES_SECONDS * 1000;
const HISTORY_MS = config.EMAIL_RETENTION_WEBHOOK_HISTORY_SECONDS * 1000;
/** A UUIDv7 of millisecond `ms` (the service's generator never goes back in time, so it cannot make old ones). */
const idAt = (ms: number) => uuidv7Floor(ms).slice(0, 24) + randomUUID().slice(24);

const openEmailDb = (kind: StorageKind) => openServiceDb(kind, "email", migrations);

/**
 * A message with one copy, a tracked link (stored with the message, and one of the earlier format
 * for the copy), a timeline event, an attachment and, if asked, an idempotency key.
 */
async function seedMessage(db: Knex, status: string, createdAt: string, idempotencyKey?: { key: string; at: string }): Promise<string> {
  const id = randomUUID();
  const copy = randomUUID();
  await db("emails").insert(messageRow({ id, status, at: createdAt, trackClicks: true }));
  await db("email_recipients").insert(
    copyRow({
      id: copy,
      emailId: id,
      status,
      at: createdAt,
      messageId: `<${copy}@example.com>`,
      returnToken: copy.replaceAll("-", ""),
      openToken: `o${copy.replaceAll("-", "")}`.slice(0, 40),
    }),
  );
  // Before migration 0009 a message's links were stored per copy only.
  if (await db.schema.hasTable("message_links")) await db("message_links").insert({ email_id: id, position: 0, url: "https://a.example" });
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
      api_key_id: "k",
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
    // First clicks: on a copy of a message that goes, and on one that stays.
    for (const id of [gone[0]!, recent]) {
      const copy = (await db("email_recipients").where({ email_id: id }).first("id")) as { id: string };
      await db("link_clicks").insert({ recipient_id: copy.id, position: 0, clicked_at: old });
    }

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
    expect(await count(db, "message_links")).toBe(waiting.length + 2);
    expect(await count(db, "link_clicks")).toBe(1);
    for (const id of [...waiting, recent, keyExpired]) expect(await count(db, "emails", { id })).toBe(1);
    expect((await db("idempotency_keys").pluck("key")).sort()).toEqual(["recent-key"]);
    expect((await db("webhook_deliveries").pluck("id")).sort()).toEqual([oldPendingId, newId].sort());
    expect(await db("webhook_attempts").pluck("id")).toEqual([newId]);
    expect(await count(db, "webhook_events")).toBe(1);

    // A second run finds nothing left to do.
    expect(Object.values(await createPurger(db, rules, { batchRows: 2 }).purge(new Date(NOW))).every((n) => n === 0)).toBe(true);
  });
});

describe.each<StorageKind>(["sqlite", "postgres"])("email retention batches on %s", (kind) => {
  it("each batch's walk starts at the greatest time the last batch deleted, so ties past a LIMIT still go", async () => {
    const t = await openEmailDb(kind);
    try {
      const { db } = t;
      const at = (days: number) => ago(MESSAGES_MS + days * DAY);
      // Five finished messages, three of them sent at the same moment, and one still queued among them.
      const finished = [await seedMessage(db, "Delivered", at(5)), await seedMessage(db, "Bounced", at(4))];
      for (let i = 0; i < 3; i++) finished.push(await seedMessage(db, "Delivered", at(3)));
      const queued = await seedMessage(db, "Queued", at(4));
      const walks: unknown[][] = [];
      const capture = (q: { sql: string; bindings?: unknown[] }) => {
        if (/^delete/i.test(q.sql)) walks.push(q.bindings ?? []);
      };
      db.on("query", capture);
      try {
        const messages = rules.filter((r) => r.name === "messages");
        expect(await createPurger(db, messages, { batchRows: 2 }).purge(new Date(NOW))).toEqual({ messages: 5 });
      } finally {
        db.off("query", capture);
      }
      expect(await db("emails").pluck("id")).toEqual([queued]);
      // Batches of 2, 2 and 1 (then none): the first walks from the oldest row; each next one from
      // the last one's greatest created_at (its second binding, after the cutoff), inclusive, so the
      // third tie stays found.
      expect(walks.map((b) => b.length)).toEqual([2, 3, 3]);
      expect(walks.slice(1).map((b) => b[1])).toEqual([at(4), at(3)]);
    } finally {
      await t.close();
    }
  }, 120_000);
});

describe("email retention query plans", () => {
  it("SQLite: every rule's batch and every cascade of a deleted message search an index, with no sort", async () => {
    const t = await openEmailDb("sqlite");
    try {
      const plan = (sql: string, bindings: readonly unknown[]) => planOf(t.db, sql, bindings);
      for (const rule of rules) {
        // A run's first batch, and a later one that starts where the last ended.
        for (const from of [undefined, "2026-01-01T00:00:00.000Z"]) {
          const q = batchSelect(t.db, rule, new Date(NOW), config.EMAIL_RETENTION_BATCH_ROWS, from).toSQL();
          const steps = await plan(q.sql, q.bindings);
          expect(steps, rule.name).toMatch(/^SEARCH \w+ USING (COVERING )?INDEX|^SEARCH \w+ USING PRIMARY KEY/);
          expect(steps, rule.name).not.toMatch(/TEMP B-TREE/);
        }
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
      const plan = (sql: string, bindings: readonly unknown[]) => planOf(t.db, sql, bindings);
      for (const rule of rules) {
        for (const from of [undefined, "2026-01-01T00:00:00.000Z"]) {
          const q = batchSelect(t.db, rule, new Date(NOW), config.EMAIL_RETENTION_BATCH_ROWS, from).toSQL();
          const nodes = await plan(q.sql, q.bindings);
          expect(nodes, rule.name).toMatch(/Index (Only )?Scan/);
          expect(nodes, rule.name).not.toMatch(/Seq Scan|Sort/);
        }
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

/**
 * Migration 0007 narrowed the outbox index and made the timeline the events' key, so that a
 * finished message has fewer index entries to delete; every query that used them still searches
 * an index (and the timeline needs no sort).
 */
describe.each<StorageKind>(["sqlite", "postgres"])("email indexes after 0007 on %s", (kind) => {
  it("the outbox and the timeline search their (partial) indexes", async () => {
    const t = await openEmailDb(kind);
    try {
      const { db } = t;
      const q = createEmailStorage(db).messages;
      const plansFor = (run: () => Promise<unknown>) => plansOf(db, run, { bitmapScans: true });
      const now = "2026-06-01T00:00:00.000Z";
      // SQLite's claim is a prepared statement, not a knex query: its plan as prepared, with the same values.
      const [claim] =
        kind === "sqlite"
          ? [await planOf(db, plannerSafe(MESSAGE_STATEMENTS.claimDue), ["lease", now, now, now, now, 50])]
          : await plansFor(() => q.claimDue(now, "lease", now, 50));
      expect(claim).toMatch(/email_recipients_pending/);
      const [pending] = await plansFor(() => q.pendingCopies());
      expect(pending).toMatch(/email_recipients_pending/);
      const [timeline] = await plansFor(() => q.timelineOf("x"));
      expect(timeline).toMatch(
        kind === "postgres" ? /Index Scan using email_events_pkey/ : /SEARCH email_events USING PRIMARY KEY \(email_id=\?\)/,
      );
      expect(timeline).not.toMatch(/TEMP B-TREE|Sort/);
    } finally {
      await t.close();
    }
  }, 120_000);

  it("0007 on a database with messages keeps every event and every copy's place in the outbox", async () => {
    const upTo0006 = Object.fromEntries(Object.entries(migrations).filter(([name]) => name < "0007"));
    const t = await openServiceDb(kind, "email", upTo0006);
    try {
      const { db } = t;
      const delivered = await seedMessage(db, "Delivered", ago(DAY));
      const queued = await seedMessage(db, "Queued", ago(DAY));
      await db("email_recipients")
        .where({ email_id: queued })
        .update({ next_attempt_at: ago(0) });
      const eventsBefore = await db("email_events").orderBy("id");
      await t.migrateTo(migrations);
      expect(await db("email_events").orderBy("id")).toEqual(eventsBefore);
      const q = createEmailStorage(db).messages;
      expect((await q.timelineOf(delivered)).map((e) => e.email_id)).toEqual([delivered]);
      expect(await q.pendingCopies()).toEqual({ depth: 1, earliestDueAt: ago(0) });
      // The cascade from a message still reaches its timeline.
      await db("emails").where({ id: delivered }).delete();
      expect(await count(db, "email_events", { email_id: delivered })).toBe(0);
    } finally {
      await t.close();
    }
  }, 120_000);
});

/**
 * The purge of a message and a late open, click or outcome report on one of its copies must not
 * deadlock (PostgreSQL aborts one of two transactions that wait for each other with 40P01: the
 * purge run fails, or the pixel or click gets a 500). The purge locks the message, then its cascade
 * the copy; so the request paths lock the message before the copy (lockEmail). Provoked on
 * PostgreSQL with a third transaction holding the copy: the request starts and waits for it, the
 * purge starts (and, locking in the request's old order, waits for it too), then the copy is
 * released; and the other way round, the purge first. Neither may fail, and the outcome must be
 * one of the two orders: the message purged with everything of it, or the event recorded (and
 * the message purged by a later run). On SQLite (one writer) both run concurrently.
 */
describe.each<StorageKind>(["sqlite", "postgres"])("email retention and late events on one message on %s", (kind) => {
  let t: { db: Database; close(): Promise<void> };
  beforeAll(async () => {
    t = await openEmailDb(kind);
  }, 120_000);
  afterAll(async () => t?.close());

  const clock = { ...systemClock, now: () => new Date(NOW) };
  const requests = {
    open: { event: "email.opened", run: (r: Requests, copy: { open_token: string }) => r.tracking.open(copy.open_token) },
    click: { event: "email.clicked", run: (r: Requests, copy: { id: string }) => r.tracking.click(r.clickTokens.sign(copy.id, 0)) },
    "click of the earlier format": {
      event: "email.clicked",
      run: (r: Requests, _copy: unknown, link: string) => r.tracking.click(link),
    },
    outcome: {
      event: "email.complained",
      run: (r: Requests, copy: { id: string }) =>
        r.db.transaction((trx) => r.outcomes.apply(trx, copy.id, { kind: "complained", feedbackType: "abuse" })),
    },
  } as const;
  type Requests = { db: Database; tracking: Tracking; outcomes: Outcomes; clickTokens: ClickTokens };

  function requestsOf(db: Database): Requests {
    const queries = createEmailStorage(db).messages;
    const events = {
      publish: async (_trx: unknown, _type: string, _data: unknown, at: string) => uuidv7(Date.parse(at)),
    } as EventPublisher;
    const suppressions = { add: async () => {} } as unknown as Suppressions;
    const outcomes = createOutcomes({ clock, queries, suppressions, events });
    const clickTokens = createClickTokens(Buffer.alloc(32, 7));
    return {
      db,
      outcomes,
      clickTokens,
      tracking: createTracking({ transaction: (work) => db.transaction(work), clock, queries, outcomes, events, clickTokens }),
    };
  }

  /** Waits until `n` backends of this database wait for a lock, or `ended` settles first (false then). */
  async function lockWaiters(n: number, ended: Promise<unknown>): Promise<boolean> {
    let settled = false;
    void ended.then(
      () => (settled = true),
      () => (settled = true),
    );
    for (const deadline = Date.now() + 10_000; Date.now() < deadline; ) {
      const { rows } = (await t.db.raw(
        "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'",
      )) as { rows: Array<{ n: number }> };
      if (rows[0]!.n >= n) return true;
      if (settled) return false;
      await new Promise((r) => setTimeout(r, 10));
    }
    throw new Error(`${n} transactions never waited for a lock`);
  }

  it("X-EM-25 a late delayed or feedback report whose message is purged after its copy was read is dropped, not an error", async () => {
    const { db } = t;
    for (const report of ["delayed", "feedback"] as const) {
      const id = await seedMessage(db, "Delivered", ago(MESSAGES_MS + DAY));
      const copy = (await db("email_recipients").where({ email_id: id }).first()) as { return_token: string; message_id: string };
      const logged: Array<{ level: number; msg: string }> = [];
      const sink = new Writable({ write: (line, _enc, done) => (logged.push(JSON.parse(String(line))), done()) });
      const queries = createEmailStorage(db).messages;
      // The purge commits between the report's two reads: its copy was found, then the message went.
      const purgedAfterRead =
        <A extends unknown[], R>(find: (...args: A) => Promise<R>) =>
        async (...args: A): Promise<R> => {
          const found = await find(...args);
          await createPurger(db, rules.slice(0, 1), { batchRows: 10 }).purge(new Date(NOW));
          return found;
        };
      queries.recipientByReturnToken = purgedAfterRead(queries.recipientByReturnToken);
      queries.recipientByMessageId = purgedAfterRead(queries.recipientByMessageId);
      const { outcomes } = requestsOf(db);
      const reports = createReports({
        transaction: (work) => db.transaction(work),
        logger: pino({ level: "info" }, sink),
        queries,
        outcomes,
      });
      await reports.apply(
        report === "delayed"
          ? {
              kind: "dsn",
              token: copy.return_token,
              reportingMta: null,
              recipients: [
                { recipient: "to@example.com", originalRecipient: null, action: "delayed", status: "4.4.1", diagnostic: "later" },
              ],
            }
          : {
              kind: "arf",
              token: null,
              feedbackType: "other",
              userAgent: null,
              version: null,
              originalMessageId: copy.message_id,
              originalMailFrom: null,
              originalRcptTo: [],
              arrivalDate: null,
              sourceIp: null,
              reportedDomains: [],
            },
      );
      expect(
        logged.filter((l) => l.level >= 50).map((l) => l.msg),
        report,
      ).toEqual([]);
      expect(
        logged.map((l) => l.msg),
        report,
      ).toContain("report dropped");
      expect(await count(db, "emails", { id }), report).toBe(0);
      expect(await count(db, "email_events", { email_id: id }), report).toBe(0);
    }
  });

  for (const [name, request] of Object.entries(requests)) {
    for (const first of ["request", "purge"] as const) {
      it(`X-EM-25 a late ${name} and the purge of its message, the ${first} first: neither fails, the message is purged or the ${name} recorded`, async () => {
        const { db } = t;
        const id = await seedMessage(db, "Delivered", ago(MESSAGES_MS + DAY));
        await db("emails").where({ id }).update({ track_opens: true });
        const copy = (await db("email_recipients").where({ email_id: id }).first()) as { id: string; open_token: string };
        const link = (await db("email_links").where({ recipient_id: copy.id }).first()) as { token: string; url: string };
        const r = requestsOf(db);
        const purge = () => createPurger(db, rules.slice(0, 1), { batchRows: 10 }).purge(new Date(NOW));
        const send = () => request.run(r, copy as never, link.token);

        let results: PromiseSettledResult<unknown>[];
        if (kind === "sqlite") {
          results = await (first === "request"
            ? Promise.allSettled([send(), purge()])
            : Promise.allSettled([purge(), send()]).then((settled) => settled.reverse()));
        } else {
          const blocker = await db.transaction();
          await blocker("email_recipients").where({ id: copy.id }).forUpdate().select("id");
          let sent: Promise<unknown>;
          let purged: Promise<unknown>;
          try {
            if (first === "request") {
              sent = send();
              expect(await lockWaiters(1, sent)).toBe(true);
              // Locking in the purge's order, the request holds the message: the purge skips it.
              purged = purge();
              await lockWaiters(2, purged);
            } else {
              purged = purge();
              expect(await lockWaiters(1, purged)).toBe(true);
              sent = send();
              expect(await lockWaiters(2, sent)).toBe(true);
            }
          } finally {
            await blocker.commit();
          }
          results = await Promise.allSettled([sent, purged]);
        }
        expect(results.map((s) => (s.status === "rejected" ? String(s.reason) : "ok"))).toEqual(["ok", "ok"]);

        const events = await db("email_events").where({ email_id: id }).pluck("type");
        if (await count(db, "emails", { id })) {
          expect(events).toContain(request.event);
          // The message's copies all have their outcome: a later run purges it.
          await purge();
        } else {
          expect(events).toEqual([]);
          // Gone: the documented answers of the request path (the open pixel answers either way).
          if (name.startsWith("click")) expect(await send()).toBeUndefined();
          if (name === "outcome") expect(await send()).toBe(false);
        }
        expect(await count(db, "emails", { id })).toBe(0);
        for (const table of ["email_recipients", "email_events"]) expect(await count(db, table, { email_id: id }), table).toBe(0);
      });
    }
  }
});

describe.each<StorageKind>(["sqlite", "postgres"])("email migration 0009 on %s", (kind) => {
  it("X-EM-28 0009 on a database with messages keeps the click links of the earlier format (read by their token), and the new tables go with their message", async () => {
    const upTo0008 = Object.fromEntries(Object.entries(migrations).filter(([name]) => name < "0009"));
    const t = await openServiceDb(kind, "email", upTo0008);
    try {
      const { db } = t;
      const id = await seedMessage(db, "Delivered", ago(DAY));
      const before = (await db("email_links")) as Array<{ token: string; url: string }>;
      expect(before).toHaveLength(1);
      await t.migrateTo(migrations);
      const q = createEmailStorage(db).messages;
      expect(await q.legacyLinkByToken(before[0]!.token)).toMatchObject({ url: before[0]!.url });
      expect(await q.messageLinksOf(id)).toEqual([]);
      const copy = (await db("email_recipients").where({ email_id: id }).first("id")) as { id: string };
      await db("message_links").insert({ email_id: id, position: 0, url: "https://a.example" });
      await db("link_clicks").insert({ recipient_id: copy.id, position: 0, clicked_at: ago(0) });
      await db("emails").where({ id }).delete();
      for (const table of ["message_links", "link_clicks", "email_links"]) expect(await count(db, table), table).toBe(0);
    } finally {
      await t.close();
    }
  }, 120_000);
});
