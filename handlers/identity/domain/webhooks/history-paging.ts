/**
 * Where a delivery-history request starts (X-ID-WH-6): after the row its `cursor` names, or at
 * its `page`, which is bounded because an OFFSET reads every row it skips.
 */
import { HttpProblem } from "../../../../server/http/problem.ts";
import { decodeCursor, MAX_OFFSET_ROWS, type HistoryPosition } from "../../../../server/webhooks/history.ts";

export interface HistoryRequest {
  page: number;
  pageSize: number;
  cursor?: string | undefined;
}

export function historyPosition({ page, pageSize, cursor }: HistoryRequest): HistoryPosition {
  if (cursor !== undefined) {
    const after = decodeCursor(cursor);
    if (!after) throw invalid("query.cursor", "is not a cursor from this list: pass a `next` value unchanged");
    return { after };
  }
  if (page * pageSize > MAX_OFFSET_ROWS) throw invalid("query.page", `page × pageSize must be at most ${MAX_OFFSET_ROWS}: follow \`next\` with \`cursor\` to go deeper`);
  return { page };
}

const invalid = (field: string, message: string) => new HttpProblem(400, "validation_failed", "The request does not match the contract.", { errors: [{ field, message }] });
