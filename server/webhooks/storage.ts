/**
 * The database side of a service's webhooks, built over its handle by the service's composition
 * (handlers/<service>/service.ts) and handed to its webhook domain module, which assembles the
 * subscriptions and the delivery engine from it and so never holds the handle: the endpoints table
 * (scoped by the service's scope column), the outbox queries, the delivery records and attempt
 * history the API shows, and the transactor.
 */
import { type Database, transactor } from "../storage/transaction.ts";
import { createDeliveryRecords } from "./delivery-records.ts";
import { createEndpointQueries } from "./endpoint-queries.ts";
import { createAttemptHistory } from "./history.ts";
import { createDeliveryQueries } from "./store.ts";
import type { SubscriptionRow } from "./subscriptions.ts";

export function createWebhookStorage<Row extends SubscriptionRow = SubscriptionRow>(
  db: Database,
  endpoints: { table: string; scopeColumn: string },
) {
  return {
    endpoints: createEndpointQueries<Row>(db, endpoints.table, endpoints.scopeColumn),
    deliveries: createDeliveryQueries(db),
    records: createDeliveryRecords(db),
    history: createAttemptHistory(db),
    transaction: transactor(db),
  };
}

export type WebhookStorage<Row extends SubscriptionRow = SubscriptionRow> = ReturnType<typeof createWebhookStorage<Row>>;
