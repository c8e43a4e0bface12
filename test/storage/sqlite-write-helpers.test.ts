/**
 * The SQLite write helpers on their own (server/storage/): group commit (a job's writes are
 * undone when it loses or throws, the others' commit, every caller is answered only after the
 * COMMIT, and all fail when one job's error ended the transaction), savepoints of prepared
 * statements (a throwing piece of work undoes its own writes only, and nothing is written outside
 * the transaction once it is gone), prepared statements refusing a finished transaction, and the
 * background WAL checkpoints (the log stops growing under constant writes; none
 * runs while a bulk writer such as the retention purge holds them off).
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { closeSync, mkdtempSync, openSync, readSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDatabase, type Database } from "../../server/storage/db.ts";
import type { Knex } from "knex";
import { groupCommit } from "../../server/storage/sqlite/group-commit.ts";
import { preparedStatements, withPrepared } from "../../server/storage/sqlite/statements.ts";
import { savepoint } from "../../server/storage/transaction.ts";
import { outsideCheckpoints } from "../../server/storage/sqlite-checkpointer.ts";

let dir: string;
let db: Database;
beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "sqlite-write-helpers-"));
  db = await openDatabase({ service: "helpers", databaseUrl: undefined, dataDir: dir, migrations: {} });
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
    const other = await openDatabase({ service: "helpers", databaseUrl: undefined, dataDir: dir, migrations: {} }); // a second connection
    try {
      expect(await other("codes").where({ id: "b" }).first("used")).toEqual({ used: 1 });
    } finally {
      await other.destroy();
    }
  });
  it("a job whose error ends the whole transaction (disk full) fails the batch: no later job commits on its own", async () => {
    // SQLITE_FULL (likewise an I/O error) can roll the whole transaction back, not just the statement.
    await db.raw("PRAGMA max_page_count = 40");
    const transaction = groupCommit(withPrepared(db, SQL));
    const outcomes = await Promise.allSettled([
      transaction((s) => s.grant.run("g1", "a").changes === 1),
      transaction((s) => s.grant.run("g2", "x".repeat(400_000)).changes === 1),
      transaction((s) => s.grant.run("g3", "c").changes === 1),
    ]);
    expect(outcomes.map((o) => (o.status === "rejected" ? String(o.reason) : o.value))).toEqual(
      Array(3).fill(expect.stringMatching(/SQLITE_FULL|database or disk is full/)),
    );
    expect(await db("grants")).toEqual([]);
  });
});

describe("savepoints (prepared statements on the transaction's connection)", () => {
  it("undo the writes of the work that throws, nested ones included, and the transaction goes on", async () => {
    await db.transaction(async (trx) => {
      await savepoint(trx, (sp) => sp("grants").insert({ id: "g1", code_id: "a" }));
      await expect(
        savepoint(trx, async (sp) => {
          await sp("grants").insert({ id: "g2", code_id: "b" });
          await savepoint(sp, (inner) => inner("grants").insert({ id: "g3", code_id: "c" }));
          throw new Error("boom");
        }),
      ).rejects.toThrow("boom");
      await savepoint(trx, async (sp) => {
        await sp("grants").insert({ id: "g4", code_id: "c" });
        await expect(savepoint(sp, (inner) => inner("grants").insert({ id: "g4", code_id: "dup" }))).rejects.toThrow(/UNIQUE/);
        await sp("grants").insert({ id: "g5", code_id: "c" });
      });
    });
    expect(((await db("grants").orderBy("id")) as Array<{ id: string }>).map((r) => r.id)).toEqual(["g1", "g4", "g5"]);
  });

  it("after an error that ended the transaction (disk full), rethrow it and write nothing outside the transaction", async () => {
    await db.raw("PRAGMA max_page_count = 40");
    const outcome = (p: Promise<unknown>) =>
      p.then(
        () => "ok",
        (err: unknown) => String(err),
      );
    const outcomes: string[] = [];
    const committed = await outcome(
      db.transaction(async (trx) => {
        outcomes.push(await outcome(savepoint(trx, (sp) => sp("grants").insert({ id: "g1", code_id: "a" }))));
        outcomes.push(await outcome(savepoint(trx, (sp) => sp("grants").insert({ id: "g2", code_id: "x".repeat(400_000) }))));
        // A savepoint opened now would begin a transaction of its own, which its RELEASE commits.
        outcomes.push(await outcome(savepoint(trx, (sp) => sp("grants").insert({ id: "g3", code_id: "c" }))));
      }),
    );
    expect(outcomes).toEqual(["ok", expect.stringMatching(/database or disk is full/), expect.stringMatching(/no transaction/)]);
    expect(committed).not.toBe("ok");
    expect(await db("grants")).toEqual([]);
  });
});

describe("prepared statements on a transaction", () => {
  it("refuse a transaction that has finished, as knex's queries do: nothing is written outside it", async () => {
    const run = preparedStatements(SQL);
    let finished: Knex.Transaction | undefined;
    await db.transaction(async (trx) => {
      finished = trx;
    });
    await expect(finished!("grants").insert({ id: "g1", code_id: "a" })).rejects.toThrow(/already complete/);
    await expect(run(finished!, (s) => s.grant.run("g2", "b"))).rejects.toThrow(/already complete/);
    expect(await db("grants")).toEqual([]);
  });
});

describe("background WAL checkpoints", () => {
  it("keep the write-ahead log from growing under constant writes", async () => {
    await db.raw("CREATE TABLE blobs (id INTEGER PRIMARY KEY, v TEXT)");
    const walBytes = () => statSync(join(dir, "helpers.sqlite-wal")).size;
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

  it("wait while a bulk writer holds them off, then copy its log back", async () => {
    await db.raw("CREATE TABLE blobs (id INTEGER PRIMARY KEY, v TEXT)");
    // The WAL index (the -shm file): the log's last frame (mxFrame, byte 16 of its header) and
    // how far checkpoints have copied it back (nBackfill, byte 96), native little-endian.
    const walIndex = () => {
      const fd = openSync(join(dir, "helpers.sqlite-shm"), "r");
      try {
        const b = Buffer.alloc(100);
        readSync(fd, b, 0, 100, 0);
        return { frames: b.readUInt32LE(16), copied: b.readUInt32LE(96) };
      } finally {
        closeSync(fd);
      }
    };
    const during = await outsideCheckpoints(db, async () => {
      for (let i = 0; i < 20; i++) await db.raw("INSERT INTO blobs (v) VALUES (?)", ["x".repeat(2000)]);
      await new Promise((r) => setTimeout(r, 600)); // two checkpoint intervals and more
      return walIndex();
    });
    expect(during.frames).toBeGreaterThan(0);
    expect(during.copied).toBeLessThan(during.frames);
    await new Promise((r) => setTimeout(r, 600));
    const after = walIndex();
    expect(after.frames).toBe(during.frames);
    expect(after.copied).toBe(after.frames);
  });
});
