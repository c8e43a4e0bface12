/**
 * The webhook engine's retention rules, the same in every service that delivers webhooks: finished
 * deliveries, their attempts and the events they carried are deleted this long after they were
 * made; a pending delivery stays whatever its age. Attempts and deliveries are found by their
 * UUIDv7 ids (creation time, the primary key's order), so the engine's hottest tables need no
 * extra index; events by `created_at`, which each service's migrations index.
 */
import type { PurgeRule } from "../storage/retention.ts";
import { uuidv7Floor } from "./ids.ts";
import { webhookAttempts, webhookDeliveries, webhookEvents } from "./storage/schema.ts";

export function webhookHistoryRules(seconds: number): PurgeRule[] {
  const floor = (now: Date) => uuidv7Floor(now.getTime() - seconds * 1000);
  return [
    {
      name: "webhook attempts",
      table: webhookAttempts.name,
      key: "id",
      expired: (now) => ({ sql: "id < ?", bindings: [floor(now)] }),
      orderBy: "id",
    },
    {
      name: "webhook deliveries",
      table: webhookDeliveries.name,
      key: "id",
      expired: (now) => ({ sql: "id < ? AND status <> 'pending'", bindings: [floor(now)] }),
      orderBy: "id",
    },
    {
      name: "webhook events",
      table: webhookEvents.name,
      key: "id",
      expired: (now) => ({ sql: "created_at < ?", bindings: [new Date(now.getTime() - seconds * 1000).toISOString()] }),
      orderBy: "created_at",
    },
  ];
}
