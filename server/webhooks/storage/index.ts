/**
 * The database side of a service's webhooks, built over its handle by the service's composition
 * (handlers/<service>/service.ts) and handed to its webhook domain module, which assembles the
 * subscriptions and the delivery engine from it and so never holds the handle: the endpoints table
 * (scoped by the service's scope column), the outbox the engine works, the delivery records and
 * attempt history the API shows, and the transactor.
 *
 * The one place that looks at the database: each store's implementation is chosen here, once, for
 * the handle's dialect (svix's queue backends are chosen the same way). A store written in knex
 * serves both; `sqlite/` and `postgres/` hold the operations each writes its own way.
 */
import type { Knex } from "knex";
import { type Dialect, dialectOf } from "../../storage/dialect.ts";
import { type Database, type Transactor, transactor } from "../../storage/transaction.ts";
import { type AttemptHistory, knexAttemptHistory } from "./attempt-history.ts";
import type { DeliveryRecords } from "./delivery-records.ts";
import type { DeliveryStore } from "./deliveries.ts";
import { type EndpointStore, type EndpointsTable, knexEndpoints } from "./endpoints.ts";
import { postgresDeliveries } from "./postgres/deliveries.ts";
import { postgresDeliveryRecords } from "./postgres/delivery-records.ts";
import type { SubscriptionRow } from "./schema.ts";
import { sqliteDeliveries } from "./sqlite/deliveries.ts";
import { sqliteDeliveryRecords } from "./sqlite/delivery-records.ts";
import { sqliteEndpoints } from "./sqlite/endpoints.ts";

/** One database's implementation of each store. */
interface WebhookBackend {
  endpoints<Row extends SubscriptionRow>(db: Knex, table: EndpointsTable): EndpointStore<Row>;
  deliveries(db: Knex): DeliveryStore;
  records(db: Knex): DeliveryRecords;
  history(db: Knex): AttemptHistory;
}

const BACKENDS: Record<Dialect, WebhookBackend> = {
  sqlite: { endpoints: sqliteEndpoints, deliveries: sqliteDeliveries, records: sqliteDeliveryRecords, history: knexAttemptHistory },
  postgres: { endpoints: knexEndpoints, deliveries: postgresDeliveries, records: postgresDeliveryRecords, history: knexAttemptHistory },
};

export interface WebhookStorage<Row extends SubscriptionRow = SubscriptionRow> {
  endpoints: EndpointStore<Row>;
  deliveries: DeliveryStore;
  records: DeliveryRecords;
  history: AttemptHistory;
  /** Opens the transactions that change an endpoint together with its deliveries. */
  transaction: Transactor;
}

/** `endpoints`: the service's endpoints table and its scope column. */
export function createWebhookStorage<Row extends SubscriptionRow = SubscriptionRow>(
  db: Database,
  endpoints: EndpointsTable,
): WebhookStorage<Row> {
  const backend = BACKENDS[dialectOf(db)];
  return {
    endpoints: backend.endpoints<Row>(db, endpoints),
    deliveries: backend.deliveries(db),
    records: backend.records(db),
    history: backend.history(db),
    transaction: transactor(db),
  };
}

/** The outbox alone, for tools and tests that drive the engine's tables without a service. */
export const createDeliveryStore = (db: Database): DeliveryStore => BACKENDS[dialectOf(db)].deliveries(db);

/** The delivery records alone (tools and tests). */
export const createDeliveryRecords = (db: Database): DeliveryRecords => BACKENDS[dialectOf(db)].records(db);

/** The attempt history alone (tools and tests). */
export const createAttemptHistory = (db: Database): AttemptHistory => BACKENDS[dialectOf(db)].history(db);

/** The history's page statement as the store builds it, unrun: for reading the planner's plan of exactly what runs (tools and tests). */
export { historyQuery } from "./attempt-history.ts";
