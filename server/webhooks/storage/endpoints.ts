/**
 * A service's webhook endpoints (its subscriptions table): what server/webhooks/subscriptions.ts
 * reads and writes. Each service keeps them in a table of its own, scoped by a column of its own
 * (identity: the application; email: the mode), with the common columns of ./schema.ts and its own
 * beside them (its `Row`). Every read of one scope is filtered by the scope column.
 */
import type { Knex } from "knex";
import { countRows } from "../../storage/db.ts";
import type { Tx } from "../../storage/transaction.ts";
import { type SubscriptionColumns, type SubscriptionRow, subscriptionsTable } from "./schema.ts";

/** Where a service keeps its endpoints: the table, and the column that scopes them. */
export interface EndpointsTable {
  table: string;
  scopeColumn: string;
}

export interface EndpointStore<Row extends SubscriptionRow = SubscriptionRow> {
  /** One page of a scope's endpoints by creation, the id breaking ties (so pages never overlap), and the scope's total. */
  page(scope: string, order: "asc" | "desc", limit: number, offset: number): Promise<{ items: Row[]; totalCount: number }>;
  find(scope: string, id: string): Promise<Row | undefined>;
  byIds(ids: string[]): Promise<Row[]>;
  /** The active endpoints of these scopes (their common columns: the event filter's read), in the caller's transaction. */
  active(scopes: string[], trx: Tx): Promise<SubscriptionColumns[]>;
  /** Inserts the endpoint into `scope`; returns the row as stored. */
  insert(scope: string, row: Row): Promise<Row>;
  update(id: string, patch: Partial<Row>, trx?: Tx): Promise<void>;
  delete(id: string, trx?: Tx): Promise<void>;
}

/**
 * The service's `Row` is its own (its scope column and own columns are not declared here): those
 * reads return the table's rows as stored. The common columns are the schema's.
 */
export function knexEndpoints<Row extends SubscriptionRow = SubscriptionRow>(
  db: Knex,
  { table, scopeColumn }: EndpointsTable,
): EndpointStore<Row> {
  const on = (trx?: Tx): Knex => trx ?? db;
  const scoped = (scope: string) => db(table).where(scopeColumn, scope);
  const common = subscriptionsTable(table);
  return {
    async page(scope, order, limit, offset) {
      const q = scoped(scope);
      const items: Row[] = await q
        .clone()
        .orderBy([
          { column: "created_at", order },
          { column: "id", order },
        ])
        .limit(limit)
        .offset(offset);
      return { items, totalCount: await countRows(q) };
    },
    find: (scope, id) => scoped(scope).andWhere("id", id).first(),
    byIds: (ids) => db(table).whereIn("id", ids),
    active: (scopes, trx) =>
      trx<SubscriptionColumns>(table)
        .select(...common.columns)
        .whereIn(scopeColumn, [...new Set(scopes)])
        .andWhere("is_active", true),
    insert: async (scope, row) => {
      const stored: Row = { ...row, [scopeColumn]: scope };
      await db(table).insert(stored);
      return stored;
    },
    update: async (id, patch, trx) => {
      await on(trx)(table).where("id", id).update(patch);
    },
    delete: async (id, trx) => {
      await on(trx)(table).where("id", id).delete();
    },
  };
}
