/** The webhook delivery engine: outbox, leased dispatcher, signing schemes, retry policies, SSRF guard. */
export { createDeliveryEngine, type DeliveryEngine, type Endpoint, type EngineOptions, type EnqueueInput } from "./engine.ts";
export { fixedDelayPolicy, exponentialBackoffPolicy, jitteredExponentialPolicy, noRetryPolicy, type RetryPolicy } from "./policy.ts";
export { hexHmacScheme, standardWebhooksScheme, combineSchemes, generateWebhookSecret, type SignatureScheme } from "./signatures.ts";
export { createAddressPolicy, checkWebhookUrl, BlockedAddressError, type AddressPolicy } from "./ssrf.ts";
export { createSender, type Sender, type SendResult, type AttemptError } from "./sender.ts";
export type { AttemptRow, DeliveryRow, DeliveryStatus, SubscriptionRow, Trigger } from "./storage/schema.ts";
export { createDeliveryTables, dropDeliveryTables, subscriptionColumns } from "./storage/migrations/webhook-tables.ts";
export { fillDeliveryPages, leaveRoomForLeases } from "./storage/migrations/room-for-leases.ts";
export { pendingDeliveries } from "./storage/deliveries.ts";
export type { DeliveryRecord } from "./storage/delivery-records.ts";
export type { EndpointStore } from "./storage/endpoints.ts";
export { uuidv7 } from "./ids.ts";
export { createSecretBox, type SecretBox } from "../security/secret-box.ts";
export { loadWebhookSealingKey } from "./sealing-key.ts";
export { createWebhookStorage, type WebhookStorage } from "./storage/index.ts";
export { createSubscriptions, newSealingKey, type Subscriptions, type SubscriptionEvent } from "./subscriptions.ts";
