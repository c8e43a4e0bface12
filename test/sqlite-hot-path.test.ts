/**
 * The SQLite hot-path helpers on their own (server/storage/): group commit (a job's writes are
 * undone when it loses or throws, the others' commit, every caller is answered only after the
 * COMMIT) and the background WAL checkpoints (the log stops growing under constant writes).
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDatabase, type Database } from "../server/storage/db.ts";
import { groupCommit, withPrepared } from "../server/storage/sqlite-prepared.ts";
import { groupTransaction } from "../server/storage/group-transaction.ts";

let dir: string;
let db: Database;
beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "hot-path-"));
  db = await openDatabase({ service: "hot", databaseUrl: undefined, dataDir: dir, migrations: {} });
  await db.raw("CREATE TABLE codes (id TEXT PRIMARY KEY, used INTEGER NOT NULL DEFAULT 0)");
  await db.raw("CREATE TABLE grants (id TEXT PRIMARY KEY, code_id TEXT NOT NULL)");
  await db.raw("INSERT INTO codes (id) VALUES ('a'), ('b'), ('c')");
});
afterEach(async () => {
  await db.destroy();
  rmSync(dir, { recursive: true, force: true });
});

const SQL = {
  consume: "UPDATE codes SET used = 1 WHERE id = ? AND used = 0",
  grant: "INSERT INTO grants (id, code_id) VALUES (?, ?)",
};

describe("group commit", () => {
  it("of concurrent jobs consuming one code exactly one wins; a loser's and a thrower's writes are undone, the others commit", async () => {
    const transaction = groupCommit(withPrepared(db, SQL));
    const redeem = (code: string, grant: string, fail = false) =>
      transaction((s) => {
        s.grant.run(grant, code); // written before the decision, so a loss must undo it
        if (s.consume.run(code).changes !== 1) return false;
        if (fail) throw new Error("boom");
        return true;
      });
    const outcomes = await Promise.allSettled([
      redeem("a", "g1"),
      redeem("a", "g2"),
      redeem("b", "g3", true),
      redeem("c", "g4"),
      redeem("a", "g5"),
    ]);
    expect(outcomes.map((o) => (o.status === "fulfilled" ? o.value : "rejected"))).toEqual([true, false, "rejected", true, false]);
    expect(((await db("grants").orderBy("id")) as Array<{ id: string }>).map((r) => r.id)).toEqual(["g1", "g4"]);
    expect(((await db("codes").orderBy("id")) as Array<{ id: string; used: number }>).map((r) => [r.id, r.used])).toEqual([
      ["a", 1],
      ["b", 0],
      ["c", 1],
    ]);
  });

  it("answers each caller only after the COMMIT: another connection already sees the row when the promise settles", async () => {
    const transaction = groupCommit(withPrepared(db, SQL));
    await transaction((s) => s.consume.run("b").changes === 1);
    const other = await openDatabase({ service: "hot", databaseUrl: undefined, dataDir: dir, migrations: {} }); // a second connection
    try {
      expect(await other("codes").where({ id: "b" }).first("used")).toEqual({ used: 1 });
    } finally {
      await other.destroy();
    }
  });
});

describe("group transaction (knex jobs)", () => {
  it("shares one COMMIT among concurrent jobs; a throwing job's writes are undone and it alone rejects", async () => {
    const transaction = groupTransaction(db);
    const grant = (id: string, code: string, fail = false) =>
      transaction(async (trx) => {
        await trx("grants").insert({ id, code_id: code });
        if (fail) throw new Error("boom");
        return id;
      });
    const commits: string[] = [];
    db.on("query", (q: { sql: string }) => void (/^commit/i.test(q.sql) && commits.push(q.sql)));
    const duplicate = () => transaction((trx) => trx("grants").insert({ id: "g1", code_id: "x" })); // a unique violation after g1
    const outcomes = await Promise.allSettled([grant("g1", "a"), duplicate(), grant("g2", "b", true), grant("g3", "c")]);
    expect(outcomes.map((o) => (o.status === "fulfilled" ? o.value : "rejected"))).toEqual(["g1", "rejected", "rejected", "g3"]);
    expect(((await db("grants").orderBy("id")) as Array<{ id: string; code_id: string }>).map((r) => [r.id, r.code_id])).toEqual([
      ["g1", "a"],
      ["g3", "c"],
    ]);
    expect(commits).toHaveLength(1);
  });

  it("answers each caller only after the COMMIT: another connection already sees the row when the promise settles", async () => {
    const transaction = groupTransaction(db);
    await transaction((trx) => trx("codes").where({ id: "b" }).update({ used: 1 }));
    const other = await openDatabase({ service: "hot", databaseUrl: undefined, dataDir: dir, migrations: {} });
    try {
      expect(await other("codes").where({ id: "b" }).first("used")).toEqual({ used: 1 });
    } finally {
      await other.destroy();
    }
  });
});

describe("background WAL checkpoints", () => {
  it("keep the write-ahead log from growing under constant writes", async () => {
    await db.raw("CREATE TABLE blobs (id INTEGER PRIMARY KEY, v TEXT)");
    const walBytes = () => statSync(join(dir, "hot.sqlite-wal")).size;
    const sizes: number[] = [];
    for (let round = 0; round < 4; round++) {
      for (let i = 0; i < 200; i++) await db.raw("INSERT INTO blobs (v) VALUES (?)", ["x".repeat(2000)]);
      await new Promise((r) => setTimeout(r, 600)); // a few checkpoint intervals
      sizes.push(walBytes());
    }
    // Each round appends about as much log as the first; reused from its start after each
    // checkpoint, the file stays at the size of one round instead of growing with every round.
    expect(sizes[0]).toBeGreaterThan(0);
    expect(Math.max(...sizes)).toBeLessThan(1.5 * sizes[0]!);
  });
});
