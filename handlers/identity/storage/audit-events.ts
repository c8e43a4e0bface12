/**
 * The audit events store (X-ID-AUD-1): appends security events, lists an organization's newest
 * first by keyset (occurred_at, id) or bounded page, filtered. The purge is a retention rule
 * (retention-rules.ts), not an operation here.
 */
import type { Knex } from "knex";
import type { Tx } from "../../../server/storage/transaction.ts";
import { type AuditEventRow, auditEvents } from "./schema.ts";

/** Which events a list reads: always one organization's; the rest narrow it. Times are ISO strings, `until` exclusive. */
export interface AuditEventFilter {
  organizationId: string;
  type?: string | undefined;
  userId?: string | undefined;
  applicationId?: string | undefined;
  since?: string | undefined;
  until?: string | undefined;
}

/** The last row of a page: the next page starts after it. */
export interface AuditEventKey {
  occurredAt: string;
  id: string;
}

/** Where a list starts: after a row (keyset), or at a 1-based page (OFFSET, kept shallow by the domain). */
export type AuditEventPosition = { after: AuditEventKey } | { page: number };

export interface AuditEventStore {
  insert(row: AuditEventRow, tx?: Tx): Promise<void>;
  /** A page of `pageSize`, newest first, the filter's total and the key to continue after (none on the last page). */
  list(
    filter: AuditEventFilter,
    position: AuditEventPosition,
    pageSize: number,
  ): Promise<{ items: AuditEventRow[]; totalCount: number; next: AuditEventKey | undefined }>;
}

export function knexAuditEvents(db: Knex): AuditEventStore {
  /** The filter's conditions, in the order of the indexes (organization first, then user or application, then time). */
  const filtered = (f: AuditEventFilter) => {
    const q = db<AuditEventRow>(auditEvents.name).where("organization_id", f.organizationId);
    if (f.userId !== undefined) q.andWhere("user_id", f.userId);
    if (f.applicationId !== undefined) q.andWhere("application_id", f.applicationId);
    if (f.type !== undefined) q.andWhere("type", f.type);
    if (f.since !== undefined) q.andWhere("occurred_at", ">=", f.since);
    if (f.until !== undefined) q.andWhere("occurred_at", "<", f.until);
    return q;
  };

  return {
    async insert(row, tx) {
      await (tx ?? db)(auditEvents.name).insert(row);
    },

    async list(filter, position, pageSize) {
      const q = filtered(filter).select([...auditEvents.columns]);
      if ("after" in position) {
        const { occurredAt, id } = position.after;
        q.andWhere((w) =>
          w.where("occurred_at", "<", occurredAt).orWhere((same) => same.where("occurred_at", occurredAt).andWhere("id", "<", id)),
        );
      } else {
        q.offset((position.page - 1) * pageSize);
      }
      // One row more than the page tells whether there is a next page without a second query.
      const rows = (await q
        .orderBy([
          { column: "occurred_at", order: "desc" },
          { column: "id", order: "desc" },
        ])
        .limit(pageSize + 1)) as AuditEventRow[];
      const items = rows.slice(0, pageSize);
      const last = items.at(-1);
      const next = rows.length > pageSize && last ? { occurredAt: last.occurred_at, id: last.id } : undefined;
      const counted = (await filtered(filter).count({ n: "*" }).first()) as { n: number | string } | undefined;
      return { items, totalCount: Number(counted?.n ?? 0), next };
    },
  };
}
