/**
 * What identity's deliveries carry (IdentityWebhookReceiver, spec/identity/webhooks.tsp): the
 * event catalogue, the body of a delivery, the synthetic data of test events and the signature
 * headers. The subscription side (secrets, filter, fan-out, history) is server/webhooks.
 */
import type { components } from "../../../../generated/types/identity.ts";
import { combineSchemes, hexHmacScheme, standardWebhooksScheme, type SignatureScheme } from "../../../../server/webhooks/index.ts";
import type { SubscriptionEvent } from "../../../../server/webhooks/subscriptions.ts";
import { isSecurityEvent } from "../audit-webhooks.ts";
import type { WebhookEventType } from "../events.ts";

/** The event catalogue (ID-WH-7), in its documented order. */
export const EVENT_CATALOG: components["schemas"]["WebhookEventInfo"][] = [
  { event: "user.created", description: "A new user registers (hosted sign-up, POST /api/users, or a first social sign-in)." },
  { event: "user.updated", description: "A user profile is updated." },
  { event: "user.deleted", description: "A user is deleted." },
  { event: "user.signed_in", description: "A sign-in succeeded (the audit event)." },
  { event: "user.sign_in_failed", description: "A password sign-in failed (the audit event)." },
  { event: "user.second_factor_failed", description: "A second-factor code was refused (the audit event)." },
  { event: "user.recovery_code_used", description: "A recovery code was used (the audit event)." },
  { event: "user.password_changed", description: "A user changed their password (the audit event)." },
  { event: "user.factor_enrolled", description: "A second factor was turned on (the audit event)." },
  { event: "user.factor_removed", description: "A second factor was removed (the audit event)." },
  { event: "user.recovery_codes_regenerated", description: "New recovery codes replaced the old ones (the audit event)." },
  { event: "session.ended", description: "A browser's session ended (the audit event)." },
  { event: "user.password_reset", description: "A password was set through a reset link (the audit event)." },
];

/** A delivery's body: `id` is the delivery id (receivers deduplicate by it), `timestamp` when the event happened. */
export const deliveryBody = (deliveryId: string, event: SubscriptionEvent): string =>
  JSON.stringify({ id: deliveryId, event: event.type, timestamp: event.createdAt, data: event.data });

/** Synthetic data of test events: recognisable, never a real user. */
const TEST_USER_ID = "00000000-0000-4000-8000-000000000000";
export const testData = (event: WebhookEventType, at: string): Record<string, unknown> =>
  isSecurityEvent(event)
    ? {
        auditEventId: "00000000-0000-7000-8000-000000000000",
        actor: { type: "user", id: TEST_USER_ID },
        userId: TEST_USER_ID,
        applicationId: null,
        clientAddress: "192.0.2.1",
        userAgent: "test",
        details: {},
      }
    : event === "user.deleted"
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
