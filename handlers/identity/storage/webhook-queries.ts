/** Named queries over identity's webhook subscriptions (the engine's own tables have theirs in server/webhooks/store.ts). */
import type { Knex } from "knex";
import { countRows } from "../../../server/storage/db.ts";

export type Db = Knex | Knex.Transaction;

export interface WebhookRow {
  id: string;
  organization_id: string;
  application_id: string;
  url: string;
  events: string; // JSON
  is_active: boolean | number;
  max_retries: number;
  retry_delay_seconds: number;
  secret: string; // sealed
  previous_secret: string | null; // sealed
  previous_secret_expires_at: string | null;
  created_at: string;
  updated_at: string;
}

export function createWebhookQueries(db: Knex) {
  return {
    /** An application's webhooks, oldest first (X-ID-WH-5). */
    list: async (applicationId: string, page: number, pageSize: number) => {
      const q = db<WebhookRow>("webhooks").where({ application_id: applicationId });
      const items = await q.clone().orderBy([{ column: "created_at" }, { column: "id" }]).limit(pageSize).offset((page - 1) * pageSize);
      return { items: items as WebhookRow[], totalCount: await countRows(q) };
    },
    find: (applicationId: string, id: string, trx: Db = db) => trx<WebhookRow>("webhooks").where({ application_id: applicationId, id }).first(),
    findMany: (ids: string[]) => db<WebhookRow>("webhooks").whereIn("id", ids),
    /** Active webhooks of these applications (the event filter is applied by the caller). */
    activeOfApplications: (applicationIds: string[], trx: Db) =>
      trx<WebhookRow>("webhooks").whereIn("application_id", applicationIds).andWhere({ is_active: true }),
    insert: (row: WebhookRow, trx: Db = db) => trx("webhooks").insert(row),
    update: (id: string, patch: Partial<WebhookRow>, trx: Db = db) => trx("webhooks").where({ id }).update(patch),
    delete: (id: string, trx: Db = db) => trx("webhooks").where({ id }).delete(),
  };
}

export type WebhookQueries = ReturnType<typeof createWebhookQueries>;
