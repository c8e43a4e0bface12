/**
 * Batched reads on PostgreSQL (server/storage/postgres/batched-reads.ts): the reads of one turn
 * run as one statement, each caller gets exactly its own rows (none, one or several, whatever
 * else the batch held), a read of a later turn sees what was written meanwhile, and a failing
 * statement fails every caller of its batch.
 */
import { describe, expect, it } from "vitest";
import { batchedSql, pgBatchedRead } from "../../server/storage/postgres/batched-reads.ts";
import { pgPrepared, type RunPrepared } from "../../server/storage/postgres/statements.ts";
import { openIdentityDb } from "../support/storage-fixtures.ts";

describe("batched reads on PostgreSQL", () => {
  it("the reads of one turn share one statement, and each caller gets its own rows", async () => {
    const t = await openIdentityDb("postgres");
    try {
      await t.db.schema.createTable("batch_probe", (p) => {
        p.string("k");
        p.string("v");
        p.string("at");
      });
      await t.db("batch_probe").insert([
        { k: "a", v: "a1", at: "1" },
        { k: "b", v: "b1", at: "1" },
        { k: "b", v: "b2", at: "3" },
      ]);
      const prepared = pgPrepared(t.db, "batch_probe", {
        byKey: batchedSql(["k", "since"], (p) => `SELECT v FROM batch_probe WHERE k = ${p("k")} AND at >= ${p("since")} ORDER BY v`),
      });
      let statements = 0;
      const counted: RunPrepared<"byKey"> = (name, values) => {
        statements++;
        return prepared(name, values);
      };
      const read = pgBatchedRead(counted, "byKey");
      const values = async (k: string, since: string) => (await read([k, since])).map((r) => r.v);

      const answers = await Promise.all([values("b", "0"), values("missing", "0"), values("a", "0"), values("b", "2"), values("b", "0")]);
      expect(answers).toEqual([["b1", "b2"], [], ["a1"], ["b2"], ["b1", "b2"]]);
      expect(statements).toBe(1);

      await t.db("batch_probe").insert({ k: "missing", v: "m1", at: "1" });
      expect(await values("missing", "0")).toEqual(["m1"]);
      expect(statements).toBe(2);

      const broken = pgBatchedRead(
        pgPrepared(t.db, "batch_probe", { broken: batchedSql(["k"], (p) => `SELECT v FROM no_such_table WHERE k = ${p("k")}`) }),
        "broken",
      );
      const failed = await Promise.allSettled([broken(["a"]), broken(["b"])]);
      for (const f of failed) expect(f.status === "rejected" && String(f.reason)).toMatch(/no_such_table/);
    } finally {
      await t.close();
    }
  }, 120_000);
});
