/** Delivery and attempt rows as the engine stores them, for tests that write the tables directly. */
import type { AttemptRow, DeliveryRow } from "../../server/webhooks/storage/schema.ts";

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

/**
 * The first attempt of delivery `deliveryId` (of endpoint "ep", event `e-<deliveryId>`) made at `at`:
 * a 204, or a 500 whose retry is due at `retryAt`.
 */
export const firstAttempt = (o: { id: string; deliveryId: string; success: boolean; at: string; retryAt: string }): AttemptRow => ({
  id: o.id,
  delivery_id: o.deliveryId,
  endpoint_id: "ep",
  event_id: `e-${o.deliveryId}`,
  event_type: "user.created",
  attempt_number: 1,
  trigger: "event",
  status_code: o.success ? 204 : 500,
  success: o.success,
  error: o.success ? null : "non_2xx",
  error_detail: null,
  response_excerpt: null,
  duration_ms: 1,
  attempted_at: o.at,
  next_attempt_at: o.success ? null : o.retryAt,
});
