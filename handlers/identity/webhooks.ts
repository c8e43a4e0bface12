/**
 * The webhook API (seed §4.5, spec/identity/webhooks.tsp): admin-only (AdminAuth), scoped to the
 * admin's organization. Rules live in domain/webhooks/webhooks-area.ts; here only HTTP in and out (the
 * API's bodies of webhooks and attempts are built in shared/mappers.ts).
 */
import { paging } from "../../server/http/handler-inputs.ts";
import { adminOf, type IdentityHandlers } from "./identity-handlers.ts";
import { toDelivery, toWebhook } from "./shared/mappers.ts";
import { adminAction } from "./shared/request-origin.ts";

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

  async createWebhook(req, { webhooks }) {
    const created = await webhooks.manage.create(adminOf(req.auth).organizationId, req.params.appId, req.body, adminAction(req));
    return { status: 201, body: { ...toWebhook(created), secret: created.secret } };
  },

  async updateWebhook(req, { webhooks }) {
    const { params } = req;
    const updated = await webhooks.manage.update(
      adminOf(req.auth).organizationId,
      params.appId,
      params.webhookId,
      req.body ?? {},
      adminAction(req),
    );
    return { status: 200, body: toWebhook(updated) };
  },

  async deleteWebhook(req, { webhooks }) {
    const { params } = req;
    await webhooks.manage.remove(adminOf(req.auth).organizationId, params.appId, params.webhookId, adminAction(req));
    return { status: 204 };
  },

  async regenerateWebhookSecret(req, { webhooks }) {
    const { params } = req;
    const overlapSeconds = req.body?.overlapSeconds ?? 0;
    const organizationId = adminOf(req.auth).organizationId;
    return {
      status: 200,
      body: await webhooks.manage.regenerateSecret(organizationId, params.appId, params.webhookId, overlapSeconds, adminAction(req)),
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
