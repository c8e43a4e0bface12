/**
 * Reads of one statement that arrive in the same turn of the event loop, run as one statement
 * over all their parameters: one round trip (one write to the socket, one answer to parse) for
 * the whole turn instead of one each. For the token endpoint's lookups by key, where many
 * requests in flight each read one row.
 *
 * The statement takes one array per parameter (`$1::text[]`, …: the callers' values, column by
 * column) and names the caller of each row it returns in a `batch_item` column: the 1-based
 * position of its parameters, as `unnest(…) WITH ORDINALITY` numbers them. `batchedSql` writes it
 * around a statement written for one caller.
 *
 * A batched read is a plain read: it decides nothing. It sees what one read of each key would
 * have seen at that moment, and every single-use rule stays with the conditional write that
 * follows it. Batches leave one at a time (server/background/batcher.ts); a failing statement
 * fails every read of its batch.
 */
import { createBatcher, itemDone } from "../../background/batcher.ts";
import type { RunPrepared } from "./statements.ts";

/**
 * The batched form of `perCaller`, a statement over `parameters` (named as `$name` in it, each a
 * `text` value), as one statement over arrays of them, each row tagged with its caller.
 */
export function batchedSql(parameters: readonly string[], perCaller: (param: (name: string) => string) => string): string {
  const arrays = parameters.map((_, i) => `$${i + 1}::text[]`).join(", ");
  const keys = parameters.map((p) => `k_${p}`);
  const inner = perCaller((name) => {
    if (!parameters.includes(name)) throw new Error(`batchedSql: unknown parameter ${name}`);
    return `k.k_${name}`;
  });
  return `SELECT k.batch_item::int AS batch_item, q.* FROM unnest(${arrays}) WITH ORDINALITY AS k(${keys.join(", ")}, batch_item) CROSS JOIN LATERAL (${inner}) q`;
}

/** One caller's read: its parameter values in; its rows out, `batch_item` left in them. */
export type BatchedRead = (values: readonly string[]) => Promise<Record<string, unknown>[]>;

/** Runs `name` (written with `batchedSql`) once per turn for every caller of that turn. */
export function pgBatchedRead<K extends string>(run: RunPrepared<K>, name: K): BatchedRead {
  const batcher = createBatcher<readonly string[], Record<string, unknown>[]>({
    when: "turn",
    async flush(items) {
      const columns = items[0]!.map((_, column) => items.map((values) => values[column]));
      const rows = await run(name, columns);
      const byItem = items.map((): Record<string, unknown>[] => []);
      for (const row of rows) byItem[(row.batch_item as number) - 1]!.push(row);
      return byItem.map((own) => itemDone(own));
    },
  });
  return (values) => batcher.add(values);
}
