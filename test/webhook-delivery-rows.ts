/** A pending delivery row as the engine's outbox stores it, for tests that write the table directly. */
import type { DeliveryRow } from "../server/webhooks/store.ts";

export const pendingDelivery = (id: string, endpointId: string, at: string, eventType = "user.created"): DeliveryRow => ({
  id,
  event_id: `e-${id}`,
  endpoint_id: endpointId,
  event_type: eventType,
  body: "{}",
  status: "pending",
  attempts_made: 0,
  next_attempt_at: at,
  next_trigger: "event",
  auto_retry: true,
  send_when_inactive: false,
  lease_token: null,
  lease_expires_at: null,
  created_at: at,
  updated_at: at,
});
