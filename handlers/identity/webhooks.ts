/** Handlers of webhooks: listWebhooks, createWebhook, updateWebhook, deleteWebhook, regenerateWebhookSecret, listWebhookDeliveries, listWebhookEventTypes, redeliverWebhookDelivery, testWebhook. */
import { notBuilt, type IdentityHandlers } from "./deps.ts";

export const webhooksHandlers: Pick<IdentityHandlers, "listWebhooks" | "createWebhook" | "updateWebhook" | "deleteWebhook" | "regenerateWebhookSecret" | "listWebhookDeliveries" | "listWebhookEventTypes" | "redeliverWebhookDelivery" | "testWebhook"> = {
  listWebhooks: notBuilt,
  createWebhook: notBuilt,
  updateWebhook: notBuilt,
  deleteWebhook: notBuilt,
  regenerateWebhookSecret: notBuilt,
  listWebhookDeliveries: notBuilt,
  listWebhookEventTypes: notBuilt,
  redeliverWebhookDelivery: notBuilt,
  testWebhook: notBuilt,
};
