/**
 * X-EM-6 whatever the order of arrival: a complaint report and the relay's answer for the same copy
 * can be applied at the same time (the answer waits in its batch, outbound/record.ts, while the
 * complaint comes in over SMTP). The status machine (domain/status.ts) lets a copy move from Sent
 * to Complained and never out of Complained, so the later, weaker outcome must change nothing:
 * not when it comes after the complaint committed, and not when the two transactions run at once
 * (PostgreSQL, READ COMMITTED: both read the copy as Sent before either wrote). SQLite has one
 * writer at a time, so there the orders are the two sequential ones.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { EventPublisher } from "../../handlers/email/domain/events.ts";
import { createOutcomes, type Outcomes } from "../../handlers/email/domain/outcomes.ts";
import type { Suppressions } from "../../handlers/email/domain/suppressions.ts";
import { migrations } from "../../handlers/email/storage/migrations/index.ts";
import { createEmailStorage } from "../../handlers/email/storage/index.ts";
import { uuidv7 } from "../../server/ids.ts";
import { systemClock } from "../../server/clock.ts";
import type { Database } from "../../server/storage/db.ts";
import { copyRow, messageRow } from "./rows.ts";
import { openServiceDb, type StorageKind } from "../support/storage-fixtures.ts";

const AT = "2026-06-01T00:00:00.000Z";

/** A message with one copy in flight: Sent, under the lease `token`, as a claim leaves it. */
async function copyInFlight(db: Database, token: string): Promise<{ emailId: string; copyId: string }> {
  const emailId = randomUUID();
  const copyId = randomUUID();
  await db("emails").insert(messageRow({ id: emailId, status: "Sent", at: AT }));
  await db("email_recipients").insert({
    ...copyRow({
      id: copyId,
      emailId,
      status: "Sent",
      at: AT,
      messageId: `<${copyId}@example.com>`,
      returnToken: copyId.replaceAll("-", ""),
      openToken: `o${copyId.replaceAll("-", "")}`.slice(0, 40),
    }),
    lease_token: token,
    lease_expires_at: "2999-01-01T00:00:00.000Z",
  });
  return { emailId, copyId };
}

function outcomesOf(db: Database, suppressed: string[]): Outcomes {
  const events = { publish: async (_trx: unknown, _type: string, _data: unknown, at: string) => uuidv7(Date.parse(at)) } as EventPublisher;
  const suppressions = {
    add: async (_trx: unknown, entry: { reason: string }) => void suppressed.push(entry.reason),
  } as unknown as Suppressions;
  return createOutcomes({ clock: systemClock, queries: createEmailStorage(db).messages, suppressions, events });
}

const complaint = { kind: "complained", feedbackType: "abuse" } as const;
const delivered = { kind: "delivered", smtpResponse: "250 2.0.0 OK", smtpStatus: "2.0.0" } as const;

async function stateOf(db: Database, ids: { emailId: string; copyId: string }) {
  const copy = (await db("email_recipients").where({ id: ids.copyId }).first()) as { status: string };
  const email = (await db("emails").where({ id: ids.emailId }).first()) as { status: string };
  const events = ((await db("email_events").where({ recipient_id: ids.copyId }).orderBy("id")) as Array<{ type: string }>).map(
    (e) => e.type,
  );
  return { copy: copy.status, email: email.status, events };
}

describe.each<StorageKind>(["sqlite", "postgres"])("a complaint and the delivery answer of one copy on %s", (kind) => {
  let t: { db: Database; close(): Promise<void> };
  beforeAll(async () => {
    t = await openServiceDb(kind, "email", migrations);
  }, 120_000);
  afterAll(async () => t?.close());

  it("X-EM-6 EM-9 the complaint applied first: the delivery answer recorded after it changes nothing", async () => {
    const token = randomUUID();
    const ids = await copyInFlight(t.db, token);
    const suppressed: string[] = [];
    const outcomes = outcomesOf(t.db, suppressed);
    expect(await t.db.transaction((trx) => outcomes.apply(trx, ids.copyId, complaint))).toBe(true);
    expect(await t.db.transaction((trx) => outcomes.apply(trx, ids.copyId, delivered, { leaseToken: token, attempts: 1 }))).toBe(false);
    expect(await stateOf(t.db, ids)).toEqual({ copy: "Complained", email: "Complained", events: ["email.complained"] });
    expect(suppressed).toEqual(["complaint"]);
  });

  it("X-EM-6 EM-9 the delivery answer recorded first: the complaint after it moves Delivered to Complained", async () => {
    const token = randomUUID();
    const ids = await copyInFlight(t.db, token);
    const suppressed: string[] = [];
    const outcomes = outcomesOf(t.db, suppressed);
    expect(await t.db.transaction((trx) => outcomes.apply(trx, ids.copyId, delivered, { leaseToken: token, attempts: 1 }))).toBe(true);
    expect(await t.db.transaction((trx) => outcomes.apply(trx, ids.copyId, complaint))).toBe(true);
    expect(await stateOf(t.db, ids)).toEqual({ copy: "Complained", email: "Complained", events: ["email.delivered", "email.complained"] });
    expect(suppressed).toEqual(["complaint"]);
  });

  it.runIf(kind === "postgres")(
    "X-EM-6 EM-9 the two at once, both reading the copy as Sent: the complaint commits first and the delivery answer, waiting on it, changes nothing",
    async () => {
      const token = randomUUID();
      const ids = await copyInFlight(t.db, token);
      const suppressed: string[] = [];
      const outcomes = outcomesOf(t.db, suppressed);
      // The complaint's transaction has written the copy and not committed yet.
      const reportTrx = await t.db.transaction();
      expect(await outcomes.apply(reportTrx, ids.copyId, complaint)).toBe(true);
      // The answer's batch reads the copy as it was committed (Sent, still leased) and waits on its row.
      const answerTrx = await t.db.transaction();
      const answering = outcomes.apply(answerTrx, ids.copyId, delivered, { leaseToken: token, attempts: 1 });
      await someoneWaitsForALock(t.db, answering);
      await reportTrx.commit();
      const changed = await answering;
      await answerTrx.commit();

      expect(changed).toBe(false);
      expect(await stateOf(t.db, ids)).toEqual({ copy: "Complained", email: "Complained", events: ["email.complained"] });
      expect(suppressed).toEqual(["complaint"]);
    },
  );

  it.runIf(kind === "postgres")(
    "X-EM-6 EM-9 the two at once, both reading the copy as Sent: the delivery answer commits first and the complaint, waiting on it, moves Delivered to Complained",
    async () => {
      const token = randomUUID();
      const ids = await copyInFlight(t.db, token);
      const suppressed: string[] = [];
      const outcomes = outcomesOf(t.db, suppressed);
      // The answer's batch has written the copy and not committed yet.
      const answerTrx = await t.db.transaction();
      expect(await outcomes.apply(answerTrx, ids.copyId, delivered, { leaseToken: token, attempts: 1 })).toBe(true);
      // The complaint reads the copy as it was committed (Sent) and waits on its row.
      const reportTrx = await t.db.transaction();
      const complaining = outcomes.apply(reportTrx, ids.copyId, complaint);
      await someoneWaitsForALock(t.db, complaining);
      await answerTrx.commit();
      const changed = await complaining;
      await reportTrx.commit();

      expect(changed).toBe(true);
      expect(await stateOf(t.db, ids)).toEqual({
        copy: "Complained",
        email: "Complained",
        events: ["email.delivered", "email.complained"],
      });
      expect(suppressed).toEqual(["complaint"]);
    },
  );
});

/** Resolves once a backend of this database waits for a lock (the second writer is blocked), or `ended` settled first. */
async function someoneWaitsForALock(db: Database, ended: Promise<unknown>): Promise<void> {
  let settled = false;
  void ended.then(
    () => (settled = true),
    () => (settled = true),
  );
  for (const deadline = Date.now() + 10_000; Date.now() < deadline && !settled; ) {
    const { rows } = (await db.raw(
      "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'",
    )) as { rows: Array<{ n: number }> };
    if (rows[0]!.n > 0) return;
    await new Promise((r) => setTimeout(r, 10));
  }
}
