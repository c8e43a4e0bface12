/**
 * The shared storage layer on its own (server/storage/): `defineTable` refuses a column list that
 * differs from the row type (the `@ts-expect-error` lines fail `npm run typecheck` if it stops
 * refusing) and builds the SQL and rows of joined selects; the SQLite layer applies the planner
 * rule (`= +?`, `LIMIT +?`) to every statement it prepares, so a statement written `= ?` stays
 * prepared; the dialect of a handle.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Database, openDatabase } from "../../server/storage/db.ts";
import { dialectOf, isPostgres, isSqlite } from "../../server/storage/dialect.ts";
import { defineTable } from "../../server/storage/schema.ts";
import { definedStatements, plannerSafe, statementFor, withPrepared } from "../../server/storage/sqlite/statements.ts";

interface PetRow {
  id: string;
  name: string;
  owner_id: string | null;
}

describe("defineTable", () => {
  const pets = defineTable<PetRow>()("pets", ["id", "name", "owner_id"]);

  it("the compiler refuses a column list with a missing or an unknown column", () => {
    // @ts-expect-error owner_id is missing
    expect(() => defineTable<PetRow>()("pets", ["id", "name"])).not.toThrow();
    // @ts-expect-error colour is not a column of PetRow
    expect(() => defineTable<PetRow>()("pets", ["id", "name", "owner_id", "colour"])).not.toThrow();
    expect(() => defineTable<PetRow>()("pets", ["id", "name", "owner_id", "name"])).toThrow(/twice/);
  });

  it("builds column lists, aliased selects, inserts and parameters in column order", () => {
    expect(pets.list()).toBe("id, name, owner_id");
    expect(pets.list("p")).toBe("p.id, p.name, p.owner_id");
    expect(pets.select("p")).toBe("p.id AS p__id, p.name AS p__name, p.owner_id AS p__owner_id");
    expect(pets.insertNamed()).toBe("INSERT INTO pets (id, name, owner_id) VALUES (@id, @name, @owner_id)");
    expect(pets.parameters(3)).toBe("$3, $4, $5");
    expect(pets.values({ id: "a", name: "Rex", owner_id: null })).toEqual(["a", "Rex", null]);
  });

  it("reads a table's row out of a joined row, undefined when the LEFT JOIN found nothing, and a raw row by its columns", () => {
    const joined = { p__id: "a", p__name: "Rex", p__owner_id: null, o__id: null, o__name: null, o__owner_id: null, other: 1 };
    expect(pets.pick(joined, "p")).toEqual({ id: "a", name: "Rex", owner_id: null });
    expect(pets.pick(joined, "o")).toBeUndefined();
    expect(pets.read({ id: "b", name: "Tom", owner_id: "u", extra: true })).toEqual({ id: "b", name: "Tom", owner_id: "u" });
  });
});

describe("the SQLite planner rule", () => {
  it("writes `= +?` and `LIMIT +?` for bound parameters, leaving comparisons, literals and written `+?` alone", () => {
    expect(plannerSafe("SELECT a FROM t JOIN u ON u.id = t.u WHERE t.id = ? AND t.n >= ? AND t.m <= ? AND t.k != ? LIMIT ?")).toBe(
      "SELECT a FROM t JOIN u ON u.id = t.u WHERE t.id = +? AND t.n >= ? AND t.m <= ? AND t.k != ? LIMIT +?",
    );
    expect(plannerSafe("UPDATE t SET a = @a, b=:b WHERE id = $id AND c = ?2 limit ?")).toBe(
      "UPDATE t SET a = +@a, b=+:b WHERE id = +$id AND c = +?2 limit +?",
    );
    expect(plannerSafe("SELECT 'x = ?' AS \"y = ?\" FROM t WHERE id = +? LIMIT +?")).toBe(
      "SELECT 'x = ?' AS \"y = ?\" FROM t WHERE id = +? LIMIT +?",
    );
  });

  describe("on a database", () => {
    let dir = "";
    let db: Database;
    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), "storage-layer-"));
      db = await openDatabase({ service: "layer", databaseUrl: undefined, dataDir: dir, migrations: {} });
      await db.raw("CREATE TABLE owners (id TEXT PRIMARY KEY, name TEXT NOT NULL)");
      await db.raw("CREATE TABLE pets (id TEXT PRIMARY KEY, name TEXT NOT NULL, owner_id TEXT)");
      await db.raw("INSERT INTO owners VALUES ('o1', 'Ann'), ('o2', 'Bob')");
      await db.raw("INSERT INTO pets VALUES ('p1', 'Rex', 'o1'), ('p2', 'Tom', 'o2')");
    });
    afterAll(async () => {
      await db?.destroy();
      rmSync(dir, { recursive: true, force: true });
    });

    it("a join written `= ?` is prepared with the rule applied, recorded, and not re-prepared when its value changes", async () => {
      const sql = "SELECT p.id, o.name FROM pets p JOIN owners o ON o.id = p.owner_id WHERE p.id = ? ORDER BY o.name LIMIT ?";
      const run = withPrepared(db, { read: sql });
      // better-sqlite3 compiles a row function (through `Function`) whenever SQLite re-prepared a statement.
      let compiled = 0;
      const original = globalThis.Function;
      globalThis.Function = new Proxy(original, {
        apply(target, self, args) {
          compiled++;
          return Reflect.apply(target, self, args);
        },
      });
      try {
        expect(await run((s) => s.read.get("p1", 1))).toEqual({ id: "p1", name: "Ann" });
        const before = compiled;
        expect(await run((s) => s.read.get("p2", 2))).toEqual({ id: "p2", name: "Bob" });
        expect(await run((_s, c) => statementFor(c, sql).get("p1", 1))).toEqual({ id: "p1", name: "Ann" });
        expect(compiled - before).toBe(1); // the dynamic statement's first run only
      } finally {
        globalThis.Function = original;
      }
      expect(definedStatements().has(plannerSafe(sql))).toBe(true);
    });

    it("knows a handle's dialect", () => {
      expect([dialectOf(db), isSqlite(db), isPostgres(db)]).toEqual(["sqlite", true, false]);
    });
  });
});
