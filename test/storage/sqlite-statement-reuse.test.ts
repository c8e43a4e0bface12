/**
 * The token endpoint's prepared reads (and the access-token liveness read behind userinfo,
 * introspection and /api/*) stay prepared (ADR 0008). SQLite 3.54 (better-sqlite3 13)
 * marks a statement for re-preparation when a value bound to a `column = ?` term the planner
 * weighs may change its plan; better-sqlite3 clears the bindings after every run, and clearing
 * them expires such a statement, so each run parsed and planned its SQL again and better-sqlite3
 * compiled a new row function for it: the main part of the token endpoint's slow-down on Node 24
 * (bench/results/2026-11-23-token-node24.md). The SQLite statement layer writes those terms
 * `column = +?` itself (`plannerSafe`, server/storage/sqlite/statements.ts).
 *
 * The probe: better-sqlite3 builds its row objects with a function it compiles (`Function(…)`)
 * when a statement is first run and again whenever SQLite re-prepared it, so counting those
 * compilations counts re-preparations. The first test shows the probe sees one.
 */
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { randomUUID } from "node:crypto";
import { createIdentityStorage } from "../../handlers/identity/storage/index.ts";
import { withPrepared } from "../../server/storage/sqlite/statements.ts";
import { migrations as emailMigrations } from "../../handlers/email/storage/migrations/index.ts";
import { sqliteMessages } from "../../handlers/email/storage/sqlite/messages.ts";
import { sqliteSuppressions } from "../../handlers/email/storage/sqlite/suppressions.ts";
import { sqliteDispatch } from "../../server/webhooks/storage/sqlite/dispatch.js";
import { copyRow, messageRow } from "../email/rows.ts";
import { openIdentityDb, openServiceDb, seedParents, type IdentityDb } from "../support/storage-fixtures.ts";

const AT = "2026-01-01T00:00:00.000Z";
const LATER = "2099-01-01T00:00:00.000Z";
const ids = { org: randomUUID(), app: randomUUID(), user: randomUUID() };
const grantId = randomUUID();

let t: IdentityDb;
beforeAll(async () => {
  t = await openIdentityDb("sqlite");
  await seedParents(t.db, ids);
  await t.db("client_secrets").insert({ id: randomUUID(), application_id: ids.app, secret_hash: "a".repeat(64), created_at: AT });
  await t
    .db("oauth_grants")
    .insert({ id: grantId, application_id: ids.app, user_id: ids.user, scopes: "[]", auth_time: AT, created_at: AT });
  for (const hash of ["code-1", "code-2"])
    await t.db("oauth_codes").insert({
      code_hash: hash,
      grant_id: randomUUID(),
      application_id: ids.app,
      user_id: ids.user,
      redirect_uri: "https://client.example/cb",
      scopes: "[]",
      auth_time: AT,
      created_at: AT,
      expires_at: LATER,
    });
  for (const hash of ["refresh-1", "refresh-2"])
    await t.db("oauth_refresh_tokens").insert({ id: randomUUID(), token_hash: hash, grant_id: grantId, created_at: AT, expires_at: LATER });
});
afterAll(async () => t?.close());

/** Counts the functions compiled through the global `Function` (better-sqlite3's row functions). */
let compiled = 0;
const original = globalThis.Function;
beforeEach(() => {
  compiled = 0;
  globalThis.Function = new Proxy(original, {
    apply(target, self, args) {
      compiled++;
      return Reflect.apply(target, self, args);
    },
  });
});
afterEach(() => {
  globalThis.Function = original;
});

/** Runs `read` with a first and a second value; returns the row functions the second run compiled. */
async function compiledOnSecondRun(read: (value: string) => Promise<unknown>, first: string, second: string): Promise<number> {
  expect(await read(first)).toBeDefined();
  const before = compiled;
  expect(await read(second)).toBeDefined();
  return compiled - before;
}

describe("SQLite statements on the token endpoint's path", () => {
  it("the probe counts a re-preparation: a schema change makes the next run compile a new row function", async () => {
    await t.db.raw("CREATE TABLE probe (id TEXT PRIMARY KEY, v TEXT)");
    await t.db.raw("INSERT INTO probe (id, v) VALUES ('a', '1'), ('b', '2')");
    const run = withPrepared(t.db, { read: "SELECT id, v FROM probe WHERE id = ?" });
    const read = (id: string) => run((s) => s.read.get(id));
    expect(await compiledOnSecondRun(read, "a", "b")).toBe(0);
    await t.db.raw("CREATE INDEX probe_by_v ON probe (v)");
    const before = compiled;
    expect(await read("a")).toBeDefined();
    expect(compiled - before).toBe(1);
  });

  it("the code exchange's read (code and user, one join) is prepared once", async () => {
    const grants = createIdentityStorage(t.db).grants;
    expect(await compiledOnSecondRun((hash) => grants.findCodeForExchange(hash), "code-1", "code-2")).toBe(0);
  });

  it("the refresh grant's read (token, grant and user, two joins) is prepared once", async () => {
    const grants = createIdentityStorage(t.db).grants;
    expect(await compiledOnSecondRun((hash) => grants.findRefreshForRotation(hash), "refresh-1", "refresh-2")).toBe(0);
  });

  it("client authentication's read (application and active secrets, one join) is prepared once", async () => {
    const { applications } = createIdentityStorage(t.db);
    const read = (now: string) => applications.findClient(`client-${ids.app}`, now);
    expect(await compiledOnSecondRun(read, "2026-02-01T00:00:00.000Z", "2026-02-01T00:00:01.000Z")).toBe(0);
  });

  it("an access token's liveness read (application, user, grant, revocation: three joins) is prepared once", async () => {
    const { grants } = createIdentityStorage(t.db);
    const read = (jti: string) => grants.accessTokenState({ jti, grantId: grantId, clientId: `client-${ids.app}`, userId: ids.user });
    expect(await compiledOnSecondRun(read, `${grantId}.a`, `${grantId}.b`)).toBe(0);
  });
});

describe("SQLite statements on the email dispatcher's path", () => {
  let e: IdentityDb;
  beforeAll(async () => {
    e = await openServiceDb("sqlite", "email", emailMigrations);
    for (const [i, id] of ["m1", "m2"].entries()) {
      await e.db("emails").insert(messageRow({ id, status: "Queued", at: AT }));
      await e.db("email_recipients").insert(
        copyRow({
          id: `c${i}`,
          emailId: id,
          status: "Queued",
          at: AT,
          messageId: `<c${i}@example.com>`,
          returnToken: `r${i}`,
          openToken: `o${i}`,
          nextAttemptAt: `2026-01-01T00:00:0${i}.000Z`,
        }),
      );
      await e
        .db("email_attachments")
        .insert({ email_id: id, position: 0, size: 3, filename: "a.txt", content_type: "text/plain", content: "YWJj" });
      await e.db("message_links").insert({ email_id: id, position: 0, url: "https://a.example/" });
      await e.db("email_links").insert({ token: `t${i}`, recipient_id: `c${i}`, position: 0, url: "https://a.example/" });
    }
  });
  afterAll(async () => e?.close());

  it("the claim (an UPDATE of the copies a subquery of the same table picks) is prepared once", async () => {
    const queries = sqliteMessages(e.db);
    const claim = async (now: string) => (await queries.claimDue(now, randomUUID(), LATER, 1))[0];
    expect(await compiledOnSecondRun(claim, "2026-01-01T00:00:00.000Z", "2026-01-01T00:00:01.000Z")).toBe(0);
  });

  it("the copy's and its message's reads are prepared once", async () => {
    const queries = sqliteMessages(e.db);
    expect(await compiledOnSecondRun((id) => queries.findRecipient(id), "c0", "c1")).toBe(0);
    expect(await compiledOnSecondRun((id) => queries.findEmail(id), "m1", "m2")).toBe(0);
  });

  it("the webhook dispatcher's claim (a bound LIMIT) is prepared once", async () => {
    for (const [i, at] of ["2026-01-01T00:00:00.000Z", "2026-01-01T00:00:01.000Z"].entries())
      await e.db("webhook_deliveries").insert({
        id: `d${i}`,
        event_id: "e",
        endpoint_id: "p",
        event_type: "email.delivered",
        body: "{}",
        status: "pending",
        next_attempt_at: at,
        next_trigger: "event",
        auto_retry: true,
        created_at: AT,
        updated_at: AT,
      });
    // One dispatcher (its statements are prepared when it is made) on the pool's connection.
    const on = withPrepared(e.db, {});
    const d = await on((_s, conn) => sqliteDispatch(conn as never));
    const claim = (now: string) => on(() => (d.claimDue(now, LATER, randomUUID(), 1) as unknown[])[0]);
    expect(await compiledOnSecondRun(claim, "2026-01-01T00:00:00.000Z", "2026-01-01T00:00:01.000Z")).toBe(0);
  });

  it("the copy's suppression check (its message's mode read in a subquery, X-EM-27) is prepared once", async () => {
    await e.db("suppressions").insert({
      test_mode: false,
      address_key: "to@example.com",
      address: "to@example.com",
      reason: "manual",
      created_at: AT,
    });
    const suppressions = sqliteSuppressions(e.db);
    expect(await compiledOnSecondRun((id) => suppressions.ofCopy(id, "to@example.com"), "m1", "m2")).toBe(0);
  });

  it("the message's attachments and links, and a copy's links of the earlier format, read in order (one table, `= ?` and an ORDER BY), are prepared once", async () => {
    const queries = sqliteMessages(e.db);
    const first = async (rows: Promise<unknown[]>) => (await rows)[0];
    expect(await compiledOnSecondRun((id) => first(queries.attachmentsOf(id)), "m1", "m2")).toBe(0);
    expect(await compiledOnSecondRun((id) => first(queries.messageLinksOf(id)), "m1", "m2")).toBe(0);
    expect(await compiledOnSecondRun((id) => first(queries.legacyLinksOf(id)), "c0", "c1")).toBe(0);
  });
});
