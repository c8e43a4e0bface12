/** Webhooks (EM-1, EM-4..7): registration, secret rotation, delivery history, redelivery, test events; the caller's mode's endpoints only (X-EM-27). */
import { paging } from "../../server/http/handler-inputs.ts";
import { toDelivery, toWebhook } from "./shared/mappers.ts";
import { fullAccess, type EmailHandlers } from "./email-handlers.ts";
import type { WebhookEventType } from "./domain/events.ts";

export const webhookHandlers: Pick<
  EmailHandlers,
  | "createWebhook"
  | "listWebhooks"
  | "getWebhook"
  | "updateWebhook"
  | "deleteWebhook"
  | "rotateWebhookSecret"
  | "listWebhookDeliveries"
  | "getWebhookDelivery"
  | "redeliverWebhookDelivery"
  | "sendWebhookTestEvent"
> = {
  async createWebhook({ auth, body }, { webhooks }) {
    const { test } = fullAccess(auth);
    const { row, secret } = await webhooks.create(test, body);
    return { status: 201, headers: { Location: `/v1/webhooks/${row.id}` }, body: { ...toWebhook(row), secret } };
  },
  async listWebhooks({ auth, query }, { webhooks }) {
    const { test } = fullAccess(auth);
    const { page, pageSize } = paging(query);
    const { items, totalCount } = await webhooks.list(test, page, pageSize);
    return { status: 200, body: { items: items.map(toWebhook), totalCount, page, pageSize } };
  },
  async getWebhook({ auth, params }, { webhooks }) {
    const { test } = fullAccess(auth);
    return { status: 200, body: toWebhook(await webhooks.get(test, params.webhookId)) };
  },
  async updateWebhook({ auth, params, body }, { webhooks }) {
    const { test } = fullAccess(auth);
    return { status: 200, body: toWebhook(await webhooks.update(test, params.webhookId, body ?? {})) };
  },
  async deleteWebhook({ auth, params }, { webhooks }) {
    const { test } = fullAccess(auth);
    await webhooks.remove(test, params.webhookId);
    return { status: 204 };
  },
  async rotateWebhookSecret({ auth, params, body }, { webhooks }) {
    const { test } = fullAccess(auth);
    const { row, secret, previousSecretExpiresAt } = await webhooks.rotateSecret(test, params.webhookId, body?.overlapSeconds ?? 0);
    return { status: 200, body: { ...toWebhook(row), secret, previousSecretExpiresAt } };
  },
  async listWebhookDeliveries({ auth, params, query }, { webhooks }) {
    const { test } = fullAccess(auth);
    const { page, pageSize } = paging(query);
    const { items, totalCount } = await webhooks.deliveries(test, params.webhookId, page, pageSize, query.status);
    return { status: 200, body: { items: items.map(toDelivery), totalCount, page, pageSize } };
  },
  async getWebhookDelivery({ auth, params }, { webhooks }) {
    const { test } = fullAccess(auth);
    return { status: 200, body: toDelivery(await webhooks.delivery(test, params.webhookId, params.deliveryId)) };
  },
  async redeliverWebhookDelivery({ auth, params }, { webhooks }) {
    const { test } = fullAccess(auth);
    return { status: 202, body: toDelivery(await webhooks.redeliver(test, params.webhookId, params.deliveryId)) };
  },
  async sendWebhookTestEvent({ auth, params, body }, { webhooks }) {
    const { test } = fullAccess(auth);
    return {
      status: 202,
      body: toDelivery(await webhooks.sendTest(test, params.webhookId, (body?.type ?? "email.delivered") as WebhookEventType)),
    };
  },
};
