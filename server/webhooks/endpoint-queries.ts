/**
 * The storage of a service's webhook endpoints (its subscriptions table): the queries
 * server/webhooks/subscriptions.ts runs, built over the database handle by the service's
 * composition (service.ts, through createWebhookStorage), so the webhook rules above them never
 * hold the handle. Every read of one scope is filtered by the scope column.
 */
import type { Knex } from "knex";
import { countRows } from "../storage/db.ts";
import { isSqlite } from "../storage/dialect.ts";
import { preparedStatements } from "../storage/sqlite/statements.ts";
import type { Database, Tx } from "../storage/transaction.ts";
import type { SubscriptionRow } from "./subscriptions.ts";

export function createEndpointQueries<Row extends SubscriptionRow = SubscriptionRow>(db: Database, table: string, scopeColumn: string) {
  const scoped = (scope: string) => db(table).where(scopeColumn, scope);
  const on = (trx: Tx | undefined): Knex => trx ?? db;
  // SQLite: the event filter's read, in every transaction that publishes an event, prepared once.
  const activeOfScope = isSqlite(db)
    ? preparedStatements({ active: `SELECT * FROM ${table} WHERE ${scopeColumn} = ? AND is_active = 1` })
    : undefined;
  return {
    /** One page of a scope's endpoints, by creation (ids are UUIDv7, so they break ties in creation order), and the total. */
    async page(scope: string, order: "asc" | "desc", limit: number, offset: number): Promise<{ items: Row[]; totalCount: number }> {
      const q = scoped(scope);
      const items = (await q
        .clone()
        .orderBy([
          { column: "created_at", order },
          { column: "id", order },
        ])
        .limit(limit)
        .offset(offset)) as Row[];
      return { items, totalCount: await countRows(q) };
    },
    find: async (scope: string, id: string) => (await scoped(scope).andWhere({ id }).first()) as Row | undefined,
    byIds: async (ids: string[]) => (await db(table).whereIn("id", ids)) as Row[],
    /** Active endpoints of these scopes, read in the caller's transaction. */
    active: async (scopes: string[], trx: Tx) =>
      activeOfScope && new Set(scopes).size === 1
        ? activeOfScope(trx, (s) => s.active.all(scopes[0]) as unknown as Row[])
        : ((await trx(table)
            .whereIn(scopeColumn, [...new Set(scopes)])
            .andWhere({ is_active: true })) as Row[]),
    /** Inserts the endpoint into `scope`; returns the row as stored. */
    insert: async (scope: string, row: Row): Promise<Row> => {
      const stored = { ...row, [scopeColumn]: scope } as Row;
      await db(table).insert(stored);
      return stored;
    },
    update: async (id: string, patch: Partial<Row>, trx?: Tx) => {
      await on(trx)(table).where({ id }).update(patch);
    },
    delete: async (id: string, trx?: Tx) => {
      await on(trx)(table).where({ id }).delete();
    },
  };
}

export type EndpointQueries<Row extends SubscriptionRow = SubscriptionRow> = ReturnType<typeof createEndpointQueries<Row>>;
