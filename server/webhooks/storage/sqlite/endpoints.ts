/**
 * A service's webhook endpoints on SQLite: the portable operations (../endpoints.ts), with the
 * event filter's read of one scope as a prepared statement, since it runs in every transaction that
 * publishes an event.
 */
import type { Knex } from "knex";
import { preparedStatements } from "../../../storage/sqlite/statements.ts";
import { type EndpointStore, type EndpointsTable, knexEndpoints } from "../endpoints.ts";
import { type SubscriptionRow, subscriptionsTable } from "../schema.ts";

export function sqliteEndpoints<Row extends SubscriptionRow = SubscriptionRow>(db: Knex, endpoints: EndpointsTable): EndpointStore<Row> {
  const portable = knexEndpoints<Row>(db, endpoints);
  const common = subscriptionsTable(endpoints.table);
  const statements = preparedStatements({
    active: `SELECT ${common.list()} FROM ${common.name} WHERE ${endpoints.scopeColumn} = ? AND is_active = 1`,
  });
  return {
    ...portable,
    active: (scopes, trx) =>
      new Set(scopes).size === 1
        ? statements(trx, (s) => s.active.all(scopes[0]).map((row) => common.read(row)))
        : portable.active(scopes, trx),
  };
}
