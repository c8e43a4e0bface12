/**
 * Reading an endpoint's attempt history at any size: pages newest first by a keyset cursor over
 * an index whose order is the history's order, so the first page and the millionth cost the same
 * (no OFFSET walk, no sort), and an exact total from a per-endpoint counter kept by triggers, so
 * no page counts the whole history. `migrateAttemptHistory` adds both to the engine's tables,
 * from a service's own migration.
 */
import type { Knex } from "knex";
import { invalid } from "../domain/errors.ts";
import { countFunctionsPostgres, createRowCounter } from "../storage/count-triggers.ts";
import { isPostgres } from "../storage/dialect.ts";
import type { AttemptRow } from "./store.ts";

/** Serves `WHERE endpoint_id = ? ORDER BY attempted_at DESC, attempt_number DESC, id DESC` (read backwards). */
export const HISTORY_INDEX = "webhook_attempts_by_endpoint";
/** The index it replaces: it served the filter but not the order past `attempted_at`, so every page sorted the whole history. */
const OLD_HISTORY_INDEX = "webhook_attempts_history";

/** `OFFSET` paging stops here (page × pageSize); deeper pages are reached with the cursor. */
export const MAX_OFFSET_ROWS = 10_000;

/** Where a page starts: a 1-based page number (bounded depth), or after the row a cursor names. */
export type HistoryPosition = { page: number } | { after: HistoryKey };
/** The sort key of one attempt, which the cursor carries. */
export type HistoryKey = { attemptedAt: string; attemptNumber: number; id: string };

export async function migrateAttemptHistory(db: Knex): Promise<void> {
  await db.schema.alterTable("webhook_attempts", (t) => t.index(["endpoint_id", "attempted_at", "attempt_number", "id"], HISTORY_INDEX));
  await db.raw(`DROP INDEX ${OLD_HISTORY_INDEX}`);
  await createRowCounter(db, ATTEMPT_COUNTER);
}

/** Attempts per endpoint (the history's total). */
const ATTEMPT_COUNTER = { table: "webhook_attempts", counts: "webhook_attempt_counts", key: "endpoint_id", column: "attempts" };

/**
 * PostgreSQL: replaces the attempt counter's trigger functions with those that lock the counters in
 * key order (count-triggers.ts), in a database whose counter an older version made. SQLite: nothing.
 */
export async function migrateAttemptCounterLockOrder(db: Knex): Promise<void> {
  if (isPostgres(db)) await countFunctionsPostgres(db, ATTEMPT_COUNTER);
}

const ORDER = [
  { column: "attempted_at", order: "desc" },
  { column: "attempt_number", order: "desc" },
  { column: "id", order: "desc" },
] as const;

/**
 * The page query itself (exported so the query-plan tests check exactly what runs). It asks for
 * one row more than the page: that row tells whether a next page exists, without counting.
 */
export function historyQuery(db: Knex, endpointId: string, position: HistoryPosition, pageSize: number): Knex.QueryBuilder {
  const q = db<AttemptRow>("webhook_attempts").where({ endpoint_id: endpointId });
  // A row-value comparison is one range on the index on both databases; the expanded
  // `a < ? OR (a = ? AND …)` form is not, on SQLite.
  if ("after" in position)
    q.whereRaw("(attempted_at, attempt_number, id) < (?, ?, ?)", [
      position.after.attemptedAt,
      position.after.attemptNumber,
      position.after.id,
    ]);
  q.orderBy([...ORDER]).limit(pageSize + 1);
  if ("page" in position && position.page > 1) q.offset((position.page - 1) * pageSize);
  return q;
}

export function createAttemptHistory(db: Knex) {
  async function page(
    endpointId: string,
    position: HistoryPosition,
    pageSize: number,
  ): Promise<{ items: AttemptRow[]; next: HistoryKey | null }> {
    const rows = (await historyQuery(db, endpointId, position, pageSize)) as AttemptRow[];
    const items = rows.slice(0, pageSize);
    const last = items[items.length - 1];
    return {
      items,
      next:
        rows.length > pageSize && last ? { attemptedAt: last.attempted_at, attemptNumber: Number(last.attempt_number), id: last.id } : null,
    };
  }

  async function count(endpointId: string): Promise<number> {
    const row = (await db("webhook_attempt_counts").where({ endpoint_id: endpointId }).first("attempts")) as
      | { attempts: number | string }
      | undefined;
    return Number(row?.attempts ?? 0);
  }

  return {
    /** One page newest first, and the key of its last row when more follow. */
    page,
    /** The exact number of attempts of an endpoint: one primary-key read of its counter. */
    count,
    /** What the API shows: one page newest first, its exact total, and the opaque cursor of the next page (null on the last). */
    async read(
      endpointId: string,
      position: HistoryPosition,
      pageSize: number,
    ): Promise<{ items: AttemptRow[]; totalCount: number; next: string | null }> {
      const [{ items, next }, totalCount] = await Promise.all([page(endpointId, position, pageSize), count(endpointId)]);
      return { items, totalCount, next: next && encodeCursor(next) };
    },
  };
}

export type AttemptHistory = ReturnType<typeof createAttemptHistory>;

/** The opaque `cursor`/`next` of the API: the key of the last row shown, base64url JSON. */
export function encodeCursor(key: HistoryKey): string {
  return Buffer.from(JSON.stringify([key.attemptedAt, key.attemptNumber, key.id])).toString("base64url");
}

/** The key a cursor carries, or undefined when it is not one of ours. */
export function decodeCursor(cursor: string): HistoryKey | undefined {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"));
  } catch {
    return undefined;
  }
  if (!Array.isArray(value) || value.length !== 3) return undefined;
  const [attemptedAt, attemptNumber, id] = value as unknown[];
  if (typeof attemptedAt !== "string" || !/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/.test(attemptedAt)) return undefined;
  if (typeof attemptNumber !== "number" || !Number.isInteger(attemptNumber) || attemptNumber < 1) return undefined;
  if (typeof id !== "string" || !/^[0-9a-f-]{36}$/.test(id)) return undefined;
  return { attemptedAt, attemptNumber, id };
}

/** A history request as the API takes it: a 1-based `page` of `pageSize`, or the `cursor` a previous page gave as `next`. */
export interface HistoryRequest {
  page: number;
  pageSize: number;
  cursor?: string | undefined;
}

/**
 * Where a request starts: after the row its `cursor` names, or at its `page`, which is bounded
 * because an OFFSET reads every row it skips. A cursor we did not issue, or a page too deep, is a
 * 400 naming the query parameter.
 */
export function historyPosition({ page, pageSize, cursor }: HistoryRequest): HistoryPosition {
  if (cursor !== undefined) {
    const after = decodeCursor(cursor);
    if (!after) throw invalidQuery("query.cursor", "is not a cursor from this list: pass a `next` value unchanged");
    return { after };
  }
  if (page * pageSize > MAX_OFFSET_ROWS)
    throw invalidQuery("query.page", `page × pageSize must be at most ${MAX_OFFSET_ROWS}: follow \`next\` with \`cursor\` to go deeper`);
  return { page };
}

const invalidQuery = (field: string, message: string) =>
  invalid("validation_failed", "The request does not match the contract.", [{ field, message }]);
