/**
 * An endpoint's attempt history at any size (identity's API lists attempts): pages newest first by
 * a keyset cursor over an index whose order is the history's order, so the first page and the
 * millionth cost the same (no OFFSET walk, no sort), and an exact total from a per-endpoint counter
 * kept by triggers, so no page counts the whole history (both added by
 * migrations/attempt-history.ts). The same SQL on both databases.
 */
import type { Knex } from "knex";
import { type AttemptCountRow, type AttemptRow, webhookAttemptCounts, webhookAttempts } from "./schema.ts";

/** Where a page starts: a 1-based page number (bounded depth), or after the row a cursor names. */
export type HistoryPosition = { page: number } | { after: HistoryKey };
/** The sort key of one attempt, which the cursor carries. */
export type HistoryKey = { attemptedAt: string; attemptNumber: number; id: string };

export interface AttemptHistory {
  /** One page newest first, and the key of its last row when more follow. */
  page(endpointId: string, position: HistoryPosition, pageSize: number): Promise<{ items: AttemptRow[]; next: HistoryKey | null }>;
  /** The exact number of attempts of an endpoint: one primary-key read of its counter. */
  count(endpointId: string): Promise<number>;
  /** What the API shows: one page newest first, its exact total, and the opaque cursor of the next page (null on the last). */
  read(
    endpointId: string,
    position: HistoryPosition,
    pageSize: number,
  ): Promise<{ items: AttemptRow[]; totalCount: number; next: string | null }>;
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
export function historyQuery(
  db: Knex,
  endpointId: string,
  position: HistoryPosition,
  pageSize: number,
): Knex.QueryBuilder<AttemptRow, AttemptRow[]> {
  const q = db<AttemptRow, AttemptRow[]>(webhookAttempts.name).where({ endpoint_id: endpointId });
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

export function knexAttemptHistory(db: Knex): AttemptHistory {
  async function page(endpointId: string, position: HistoryPosition, pageSize: number) {
    const rows = await historyQuery(db, endpointId, position, pageSize);
    const items = rows.slice(0, pageSize);
    const last = items[items.length - 1];
    return {
      items,
      next:
        rows.length > pageSize && last ? { attemptedAt: last.attempted_at, attemptNumber: Number(last.attempt_number), id: last.id } : null,
    };
  }

  async function count(endpointId: string): Promise<number> {
    const row = await db<AttemptCountRow>(webhookAttemptCounts.name).where({ endpoint_id: endpointId }).first("attempts");
    return Number(row?.attempts ?? 0);
  }

  return {
    page,
    count,
    async read(endpointId, position, pageSize) {
      const [{ items, next }, totalCount] = await Promise.all([page(endpointId, position, pageSize), count(endpointId)]);
      return { items, totalCount, next: next && encodeCursor(next) };
    },
  };
}

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
