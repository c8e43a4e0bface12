/**
 * What identity's deliveries carry (IdentityWebhookReceiver, spec/identity/webhooks.tsp): the
 * event catalogue, the body of a delivery, the synthetic data of test events and the signature
 * headers. The subscription side (secrets, filter, fan-out, history) is server/webhooks.
 */
import type { components } from "../../../../generated/types/identity.ts";
import { combineSchemes, hexHmacScheme, standardWebhooksScheme, type SignatureScheme } from "../../../../server/webhooks/index.ts";
import type { SubscriptionEvent } from "../../../../server/webhooks/subscriptions.ts";
import type { UserEventType } from "../events.ts";

/** The event catalogue (ID-WH-7), in its documented order. */
export const EVENT_CATALOG: components["schemas"]["WebhookEventInfo"][] = [
  { event: "user.created", description: "A new user registers (hosted sign-up, POST /api/users, or a first social sign-in)." },
  { event: "user.updated", description: "A user profile is updated." },
  { event: "user.deleted", description: "A user is deleted." },
];

/** A delivery's body: `id` is the delivery id (receivers deduplicate by it), `timestamp` when the event happened. */
export const deliveryBody = (deliveryId: string, event: SubscriptionEvent): string =>
  JSON.stringify({ id: deliveryId, event: event.type, timestamp: event.createdAt, data: event.data });

/** Synthetic data of test events: recognisable, never a real user. */
const TEST_USER_ID = "00000000-0000-4000-8000-000000000000";
export const testData = (event: UserEventType, at: string): Record<string, unknown> =>
  event === "user.deleted"
    ? { userId: TEST_USER_ID, deletedAt: at }
    : {
        userId: TEST_USER_ID,
        email: "test@example.com",
        firstName: "Test",
        lastName: "User",
        ...(event === "user.updated" ? { changedFields: ["firstName"] } : {}),
      };

/**
 * The signature headers of identity deliveries: `X-Webhook-Signature` (hex HMAC of the body with
 * the newest secret), Standard Webhooks (one entry per valid secret), and the event type and
 * delivery id.
 */
export const identitySignature: SignatureScheme = (() => {
  const schemes = combineSchemes(hexHmacScheme("X-Webhook-Signature", "sha256="), standardWebhooksScheme());
  return (input) => {
    const headers = schemes(input);
    headers["X-Webhook-Event"] = input.eventType;
    headers["X-Webhook-Delivery-Id"] = input.deliveryId;
    return headers;
  };
})();
