/**
 * Schema of the email service: the signing-keys table it has had since its contract was published,
 * then messages, webhooks, what retention needs, and indexes narrowed to the rows looked up; then
 * room on the pages of webhook deliveries for their leases (PostgreSQL); then click tracking stored
 * once per message instead of once per copy and link; then test and live apart and Idempotency-Keys
 * per API key.
 */
import type { Migration } from "../../../../server/storage/db.ts";
import { createSigningKeysTable } from "../../../../server/keys/store.ts";
import { messages } from "./0002-messages.ts";
import { webhooks } from "./0003-webhooks.ts";
import { deliveryCounts } from "./0004-delivery-counts.ts";
import { deliveryCountDeltas } from "./0005-delivery-count-deltas.ts";
import { retention } from "./0006-retention.ts";
import { messageIndexes } from "./0007-message-indexes.ts";
import { roomForLeases } from "./0008-room-for-leases.ts";
import { messageLinks } from "./0009-message-links.ts";
import { modes } from "./0010-modes.ts";

export const migrations: Record<string, Migration> = {
  // Kept under its original name: deployments of the pending service have it applied.
  "0001_signing_keys": { up: createSigningKeysTable, down: (k) => k.schema.dropTableIfExists("signing_keys") },
  "0002_messages": messages,
  "0003_webhooks": webhooks,
  "0004_delivery_counts": deliveryCounts,
  "0005_delivery_count_deltas": deliveryCountDeltas,
  "0006_retention": retention,
  "0007_message_indexes": messageIndexes,
  "0008_room_for_leases": roomForLeases,
  "0009_message_links": messageLinks,
  "0010_modes": modes,
};
