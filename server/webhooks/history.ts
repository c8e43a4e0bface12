/**
 * An attempt-history request as the API takes it: a bounded `page`, or the `cursor` a previous page
 * gave as `next`. The history's storage (pages, cursors, total) is storage/attempt-history.ts.
 */
import { invalid } from "../domain/errors.ts";
import { decodeCursor, type HistoryPosition } from "./storage/attempt-history.ts";

/** `OFFSET` paging stops here (page × pageSize); deeper pages are reached with the cursor. */
export const MAX_OFFSET_ROWS = 10_000;

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
