/** The webhook delivery engine: outbox, leased dispatcher, signing schemes, retry policies, SSRF guard. */
export { createDeliveryEngine, type DeliveryEngine, type Endpoint, type EngineOptions, type EnqueueInput } from "./engine.ts";
export { fixedDelayPolicy, exponentialBackoffPolicy, jitteredExponentialPolicy, noRetryPolicy, type RetryPolicy } from "./policy.ts";
export { hexHmacScheme, standardWebhooksScheme, combineSchemes, generateWebhookSecret, type SignatureScheme } from "./signatures.ts";
export { createAddressPolicy, checkWebhookUrl, BlockedAddressError, type AddressPolicy } from "./ssrf.ts";
export { createSender, type Sender, type SendResult, type AttemptError } from "./sender.ts";
export {
  createDeliveryTables,
  dropDeliveryTables,
  fillDeliveryPages,
  leaveRoomForLeases,
  pendingDeliveries,
  type AttemptRow,
  type DeliveryRow,
  type DeliveryStatus,
  type Trigger,
} from "./store.ts";
export { uuidv7 } from "./ids.ts";
export { createSecretBox, type SecretBox } from "../security/secret-box.ts";
export { loadWebhookSealingKey } from "./sealing-key.ts";
export { createWebhookStorage, type WebhookStorage } from "./storage.ts";
export { createEndpointQueries, type EndpointQueries } from "./endpoint-queries.ts";
export {
  createSubscriptions,
  subscriptionColumns,
  newSealingKey,
  type Subscriptions,
  type SubscriptionRow,
  type SubscriptionEvent,
} from "./subscriptions.ts";
