/**
 * SQLite durability as docs/operations.md ("SQLite sizing and durability") promises it: every
 * connection of a service (knex's and the WAL checkpointer's) runs with synchronous=FULL, not only on
 * a fresh file but after restarts, when SQLite's WAL default would silently give NORMAL (a COMMIT
 * answered but lost on power failure).
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDatabase, type Database } from "../../server/storage/db.ts";
import { startCheckpointer } from "../../server/storage/sqlite-checkpointer.ts";
import { SQLITE_SIZING, SYNCHRONOUS_FULL } from "../../server/storage/sqlite-settings.ts";

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "durability-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const open = () => openDatabase({ service: "durable", databaseUrl: undefined, dataDir: dir, migrations: {} });
const pragma = async (db: Database, name: string) => {
  const rows = (await db.raw(`PRAGMA ${name}`)) as Array<Record<string, unknown>>;
  return Number(Object.values(rows[0]!)[0]);
};

describe("SQLite connections", () => {
  it("report synchronous=FULL on a fresh file and after every reopen of the existing WAL file", async () => {
    for (let start = 0; start < 3; start++) {
      const db = await open();
      try {
        if (start === 0) await db.raw("CREATE TABLE t (v TEXT)");
        await db.raw("INSERT INTO t (v) VALUES (?)", [String(start)]);
        expect(((await db.raw("PRAGMA journal_mode")) as Array<{ journal_mode: string }>)[0]!.journal_mode).toBe("wal");
        expect(await pragma(db, "synchronous")).toBe(SYNCHRONOUS_FULL);
      } finally {
        await db.destroy();
      }
    }
  });

  it("the checkpointer's own connection reports synchronous=FULL when it opens an existing WAL file", async () => {
    const db = await open();
    await db.raw("CREATE TABLE t (v TEXT)");
    await db.destroy();
    const checkpointer = startCheckpointer(join(dir, "durable.sqlite"));
    try {
      expect(await checkpointer.synchronous).toBe(SYNCHRONOUS_FULL);
    } finally {
      await checkpointer.stop();
    }
  });

  it("run with the documented cache and memory-map sizes", async () => {
    const db = await open();
    try {
      expect(await pragma(db, "cache_size")).toBe(-SQLITE_SIZING.cacheKiB);
      expect(await pragma(db, "mmap_size")).toBe(SQLITE_SIZING.mmapBytes);
      expect(await pragma(db, "journal_size_limit")).toBe(SQLITE_SIZING.journalSizeLimitBytes);
    } finally {
      await db.destroy();
    }
  });
});
