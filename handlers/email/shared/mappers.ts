/** Rows as the contract's bodies (generated types): the one place the API's shapes are built. */
import type { components } from "../../../generated/types/email.ts";
import type { AttemptRow, DeliveryRecord, SubscriptionRow } from "../../../server/webhooks/index.ts";
import type { ApiKeyRow } from "../domain/api-keys.ts";
import { messageStatus } from "../domain/status.ts";
import type { SuppressionRow } from "../domain/suppressions.ts";
import type { MessageRecord } from "../domain/messages.ts";
import type { RecipientRow, TimelineRow } from "../storage/messages.ts";

type S = components["schemas"];

const optional = <K extends string, V>(key: K, value: V | null | undefined) =>
  value === null || value === undefined ? {} : ({ [key]: value } as { [P in K]: V });

export const toApiKey = (r: ApiKeyRow): S["ApiKey"] => ({
  id: r.id,
  name: r.name,
  prefix: r.prefix,
  permission: r.permission,
  mode: r.mode,
  createdAt: r.created_at,
  ...optional("lastUsedAt", r.last_used_at),
});

export function toRecipient(r: RecipientRow): S["Recipient"] {
  return {
    email: r.address,
    status: r.status,
    transport: r.transport,
    messageId: r.message_id,
    attempts: Number(r.attempts),
    ...optional("smtpResponse", r.smtp_response),
    ...optional("smtpStatus", r.smtp_status),
    ...optional("errorMessage", r.error_message),
    ...(r.status === "Bounced" ? optional("bounceType", r.bounce_type) : {}),
    updatedAt: r.updated_at,
    ...optional("openedAt", r.opened_at),
    ...optional("clickedAt", r.clicked_at),
  };
}

export function toMessageEvent(t: TimelineRow, recipients: ReadonlyMap<string, RecipientRow>): S["MessageEvent"] {
  const data = JSON.parse(t.data) as Record<string, string | undefined>;
  return {
    id: t.id,
    type: t.type as S["MessageEvent"]["type"],
    recipient: recipients.get(t.recipient_id)?.address ?? "",
    createdAt: t.created_at,
    ...optional("errorMessage", data.errorMessage),
    ...optional("smtpStatus", data.smtpStatus),
    ...optional("bounceType", data.bounceType as S["BounceType"] | undefined),
    ...optional("feedbackType", data.feedbackType),
    ...optional("url", data.url),
  };
}

export function toEmail({ email: e, recipients, timeline, attachments }: MessageRecord): S["EmailMessage"] {
  const status = messageStatus(recipients.map((r) => r.status));
  const failing = ["Bounced", "Failed", "Suppressed"].includes(status)
    ? recipients.find((r) => r.status === status)?.error_message
    : undefined;
  const byId = new Map(recipients.map((r) => [r.id, r]));
  return {
    id: e.id,
    from: e.from_address,
    ...optional("fromName", e.from_name),
    to: recipients.map((r) => r.address),
    replyTo: JSON.parse(e.reply_to) as string[],
    subject: e.subject,
    status,
    ...optional("errorMessage", failing),
    tags: JSON.parse(e.tags) as string[],
    metadata: JSON.parse(e.metadata) as Record<string, string>,
    headers: JSON.parse(e.headers) as Record<string, string>,
    attachments: attachments.map((a) => ({
      filename: a.filename,
      contentType: a.content_type,
      size: Number(a.size),
      ...optional("contentId", a.content_id),
    })),
    tracking: { opens: Boolean(e.track_opens), clicks: Boolean(e.track_clicks) },
    recipients: recipients.map(toRecipient),
    events: timeline.map((t) => toMessageEvent(t, byId)),
    createdAt: e.created_at,
    updatedAt: e.updated_at,
  };
}

export const toSuppression = (r: SuppressionRow): S["Suppression"] => ({
  email: r.address,
  reason: r.reason,
  ...optional("messageId", r.email_id),
  ...optional("errorMessage", r.reason === "hard_bounce" ? r.detail : null),
  createdAt: r.created_at,
});

export const toWebhook = (r: SubscriptionRow): S["Webhook"] => ({
  id: r.id,
  url: r.url,
  events: JSON.parse(r.events) as S["WebhookEventType"][],
  description: String(r.description ?? ""),
  isActive: Boolean(r.is_active),
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

const toDeliveryAttempt = (a: AttemptRow): S["DeliveryAttempt"] => ({
  attemptNumber: Number(a.attempt_number),
  trigger: a.trigger,
  attemptedAt: a.attempted_at,
  success: Boolean(a.success),
  statusCode: a.status_code === null ? null : Number(a.status_code),
  durationMs: Number(a.duration_ms),
  ...(a.error ? { error: a.error as NonNullable<S["DeliveryAttempt"]["error"]> } : {}),
  responseBodyExcerpt: a.response_excerpt,
});

export function toDelivery({ delivery: d, attempts }: DeliveryRecord): S["WebhookDelivery"] {
  const status = d.status === "cancelled" ? "failed" : d.status;
  return {
    id: d.id,
    webhookId: d.endpoint_id,
    eventId: d.event_id,
    eventType: d.event_type as S["WebhookEventType"],
    isTest: d.next_trigger === "test" || attempts.some((a) => a.trigger === "test"),
    status,
    attemptCount: Number(d.attempts_made),
    ...(d.status === "pending" && d.next_attempt_at ? { nextAttemptAt: d.next_attempt_at } : {}),
    attempts: attempts.map(toDeliveryAttempt),
    payload: JSON.parse(d.body) as S["WebhookEvent"],
    createdAt: d.created_at,
    updatedAt: d.updated_at,
  };
}
