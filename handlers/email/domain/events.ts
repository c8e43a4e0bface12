/**
 * Email events to webhooks (EM-4, EM-7): one event id per event, the same in the body, in
 * `webhook-id` and for every subscribed endpoint; the body is fixed when the event happens, in the
 * transaction that records the change (outbox), so nothing is lost on a crash and every retry sends
 * the same bytes.
 */
import { uuidv7 } from "../../../server/ids.ts";
import type { Tx } from "../../../server/storage/transaction.ts";
import type { DeliveryEngine, Subscriptions } from "../../../server/webhooks/index.ts";
import type { EmailRow, RecipientRow } from "../storage/messages.ts";

/**
 * The scope of email's webhook endpoints is their mode (X-EM-27): a key sees and changes only its
 * mode's, and an event goes only to endpoints of its message's mode. Live keeps `default`, the one
 * scope every endpoint had before modes, so endpoints registered then stay live.
 */
export const webhookScope = (test: boolean): string => (test ? "test" : "default");

export type WebhookEventType = "email.delivered" | "email.bounced" | "email.complained" | "email.opened" | "email.clicked";

export const EVENT_TYPES: readonly WebhookEventType[] = [
  "email.delivered",
  "email.bounced",
  "email.complained",
  "email.opened",
  "email.clicked",
];

/** The `data` of an event about one recipient's copy (`status` is the recipient's: X-EM decision on multi-recipient messages). */
export function eventData(
  email: Pick<EmailRow, "id" | "metadata">,
  recipient: Pick<RecipientRow, "address" | "status" | "error_message" | "bounce_type" | "smtp_status">,
  type: WebhookEventType,
  url?: string,
) {
  return {
    id: email.id,
    toEmail: recipient.address,
    status: recipient.status,
    ...(type === "email.bounced"
      ? {
          errorMessage: recipient.error_message ?? "",
          bounceType: recipient.bounce_type ?? "soft",
          ...(recipient.smtp_status ? { smtpStatus: recipient.smtp_status } : {}),
        }
      : {}),
    ...(type === "email.clicked" && url ? { url } : {}),
    metadata: JSON.parse(email.metadata) as Record<string, string>,
  };
}

/** Serialises an event envelope with millisecond-precision `createdAt` (always `.sssZ`). */
export const envelope = (event: { id: string; type: string; createdAt: string; data: unknown }): string =>
  JSON.stringify({ id: event.id, type: event.type, createdAt: event.createdAt, data: event.data });

export function createEventPublisher(deps: { subscriptions: Subscriptions; engine: () => DeliveryEngine }) {
  return {
    /**
     * Records the event and its deliveries to every active endpoint subscribed to its type, in
     * `trx`: the endpoints of the message's mode only (`test`: a test message's event, X-EM-27).
     */
    async publish(trx: Tx, type: WebhookEventType, data: unknown, createdAt: string, test: boolean): Promise<string> {
      const event = { id: uuidv7(Date.parse(createdAt)), type, createdAt, data };
      const body = envelope(event);
      await deps.subscriptions.publish(trx, deps.engine(), [webhookScope(test)], event, () => body);
      return event.id;
    },
  };
}

export type EventPublisher = ReturnType<typeof createEventPublisher>;
