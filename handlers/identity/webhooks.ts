/**
 * The webhook API (seed §4.5, spec/identity/webhooks.tsp): admin-only (AdminAuth), scoped to the
 * admin's organization. Rules live in domain/webhooks/webhooks-area.ts; here only HTTP in and out, and the
 * API's view of webhooks and attempts.
 */
import type { components } from "../../generated/types/identity.ts";
import type { AttemptRow } from "../../server/webhooks/index.ts";
import { paging } from "../../server/http/handler-inputs.ts";
import { adminOf, type IdentityHandlers } from "./identity-handlers.ts";
import type { UserEventType } from "./domain/events.ts";
import type { OwnedWebhook } from "./domain/webhooks/webhooks-area.ts";

type Schemas = components["schemas"];

const toWebhook = ({ row, applicationName }: OwnedWebhook): Schemas["Webhook"] => ({
  id: row.id,
  organizationId: row.organization_id,
  applicationId: row.application_id,
  applicationName,
  url: row.url,
  events: JSON.parse(row.events),
  isActive: Boolean(row.is_active),
  maxRetries: Number(row.max_retries),
  retryDelaySeconds: Number(row.retry_delay_seconds),
  createdAt: row.created_at,
});

/** ID-WH-6: one record per attempt. */
const toDelivery = (a: AttemptRow): Schemas["WebhookDelivery"] => ({
  id: a.delivery_id,
  attemptId: a.id,
  webhookId: a.endpoint_id,
  eventId: a.event_id,
  event: a.event_type as UserEventType,
  statusCode: a.status_code === null ? null : Number(a.status_code),
  success: Boolean(a.success),
  attemptNumber: Number(a.attempt_number),
  deliveredAt: a.attempted_at,
  durationMs: Number(a.duration_ms),
  ...(a.error ? { error: a.error as NonNullable<Schemas["WebhookDelivery"]["error"]> } : {}),
  responseBodyExcerpt: a.response_excerpt,
  nextAttemptAt: a.next_attempt_at,
  trigger: a.trigger,
});

export const webhooksHandlers: Pick<
  IdentityHandlers,
  | "listWebhooks"
  | "createWebhook"
  | "updateWebhook"
  | "deleteWebhook"
  | "regenerateWebhookSecret"
  | "listWebhookDeliveries"
  | "listWebhookEventTypes"
  | "redeliverWebhookDelivery"
  | "testWebhook"
> = {
  async listWebhooks({ auth, params, query }, { webhooks }) {
    const { page, pageSize } = paging(query);
    const list = await webhooks.manage.list(adminOf(auth).organizationId, params.appId, page, pageSize);
    return { status: 200, body: { ...list, items: list.items.map(toWebhook) } };
  },

  async createWebhook({ auth, params, body }, { webhooks }) {
    const created = await webhooks.manage.create(adminOf(auth).organizationId, params.appId, body);
    return { status: 201, body: { ...toWebhook(created), secret: created.secret } };
  },

  async updateWebhook({ auth, params, body }, { webhooks }) {
    return {
      status: 200,
      body: toWebhook(await webhooks.manage.update(adminOf(auth).organizationId, params.appId, params.webhookId, body ?? {})),
    };
  },

  async deleteWebhook({ auth, params }, { webhooks }) {
    await webhooks.manage.remove(adminOf(auth).organizationId, params.appId, params.webhookId);
    return { status: 204 };
  },

  async regenerateWebhookSecret({ auth, params, body }, { webhooks }) {
    const overlapSeconds = body?.overlapSeconds ?? 0;
    return {
      status: 200,
      body: await webhooks.manage.regenerateSecret(adminOf(auth).organizationId, params.appId, params.webhookId, overlapSeconds),
    };
  },

  async listWebhookDeliveries({ auth, params, query }, { webhooks }) {
    const history = await webhooks.manage.deliveries(adminOf(auth).organizationId, params.appId, params.webhookId, {
      ...paging(query),
      cursor: query.cursor,
    });
    return { status: 200, body: { ...history, items: history.items.map(toDelivery) } };
  },

  async listWebhookEventTypes({ auth, params }, { webhooks }) {
    return { status: 200, body: await webhooks.manage.eventCatalog(adminOf(auth).organizationId, params.appId) };
  },

  async redeliverWebhookDelivery({ auth, params }, { webhooks }) {
    return {
      status: 202,
      body: await webhooks.manage.redeliver(adminOf(auth).organizationId, params.appId, params.webhookId, params.deliveryId),
    };
  },

  async testWebhook({ auth, params, body }, { webhooks }) {
    return {
      status: 202,
      body: await webhooks.manage.sendTest(adminOf(auth).organizationId, params.appId, params.webhookId, body?.event ?? "user.created"),
    };
  },
};
