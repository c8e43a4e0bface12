/**
 * The email service's tables: for each its name, its columns and its row type, in one place
 * (server/storage/schema.ts). test/email/storage-schema.test.ts checks every table here against the
 * migrated database on SQLite and PostgreSQL. Tables that shared modules own (the webhook tables,
 * server_secrets) are declared by those modules.
 *
 * Times are ISO 8601 UTC strings of one fixed width (24 characters, millisecond precision), so they
 * compare as text on both databases. A boolean column reads back as 0 or 1 on SQLite.
 */
import { defineTable } from "../../../server/storage/schema.ts";

/** A copy's status (spec/email/models.tsp, EmailStatus); a message's is derived from its copies' (X-EM-6). */
export type EmailStatus = "Queued" | "Sent" | "Delivered" | "Bounced" | "Complained" | "Suppressed" | "Failed";

export type Transport = "simulator" | "smtp" | "sink";

/** A message: what was sent, once for all its copies. `test_mode`: sent with a test key (X-EM-27). */
export interface EmailRow {
  id: string;
  api_key_id: string;
  from_address: string;
  from_name: string | null;
  subject: string;
  text: string | null;
  html: string | null;
  reply_to: string; // JSON
  headers: string; // JSON
  tags: string; // JSON
  metadata: string; // JSON
  track_opens: boolean | number;
  track_clicks: boolean | number;
  test_mode: boolean | number;
  status: EmailStatus;
  created_at: string;
  updated_at: string;
}
export const emails = defineTable<EmailRow>()("emails", [
  "id",
  "api_key_id",
  "from_address",
  "from_name",
  "subject",
  "text",
  "html",
  "reply_to",
  "headers",
  "tags",
  "metadata",
  "track_opens",
  "track_clicks",
  "test_mode",
  "status",
  "created_at",
  "updated_at",
]);

/**
 * A recipient's copy of a message, and the outbox of outbound mail: a copy with a
 * `next_attempt_at` waits for an attempt, under a lease while one runs.
 */
export interface RecipientRow {
  id: string;
  email_id: string;
  position: number;
  address: string;
  address_key: string;
  status: EmailStatus;
  transport: Transport;
  message_id: string;
  return_token: string;
  open_token: string;
  bounce_type: "hard" | "soft" | null;
  error_message: string | null;
  smtp_response: string | null;
  smtp_status: string | null;
  attempts: number;
  next_attempt_at: string | null;
  lease_token: string | null;
  lease_expires_at: string | null;
  opened_at: string | null;
  clicked_at: string | null;
  updated_at: string;
}
export const recipients = defineTable<RecipientRow>()("email_recipients", [
  "id",
  "email_id",
  "position",
  "address",
  "address_key",
  "status",
  "transport",
  "message_id",
  "return_token",
  "open_token",
  "bounce_type",
  "error_message",
  "smtp_response",
  "smtp_status",
  "attempts",
  "next_attempt_at",
  "lease_token",
  "lease_expires_at",
  "opened_at",
  "clicked_at",
  "updated_at",
]);

/** An attachment of a message, its content base64 as received. */
export interface AttachmentRow {
  email_id: string;
  position: number;
  size: number;
  filename: string;
  content_type: string;
  content_id: string | null;
  content: string;
}
export const attachments = defineTable<AttachmentRow>()("email_attachments", [
  "email_id",
  "position",
  "size",
  "filename",
  "content_type",
  "content_id",
  "content",
]);

/** An entry of a message's timeline (one per event of one of its copies), keyed in timeline order. */
export interface TimelineRow {
  id: string;
  email_id: string;
  recipient_id: string;
  type: string;
  data: string; // JSON
  created_at: string;
}
export const timeline = defineTable<TimelineRow>()("email_events", ["id", "email_id", "recipient_id", "type", "data", "created_at"]);

/** A tracked destination of a message (X-EM-28): number `position` in document order. */
export interface MessageLinkRow {
  email_id: string;
  position: number;
  url: string;
}
export const messageLinks = defineTable<MessageLinkRow>()("message_links", ["email_id", "position", "url"]);

/** The first click of a copy on one of its message's links (the first click is an event, a repeat is not). */
export interface LinkClickRow {
  recipient_id: string;
  position: number;
  clicked_at: string;
}
export const linkClicks = defineTable<LinkClickRow>()("link_clicks", ["recipient_id", "position", "clicked_at"]);

/** A click link of the earlier format: a random token stored per copy and link (read only, until purged). */
export interface LegacyLinkRow {
  token: string;
  recipient_id: string;
  position: number;
  url: string;
  clicked_at: string | null;
}
export const legacyLinks = defineTable<LegacyLinkRow>()("email_links", ["token", "recipient_id", "position", "url", "clicked_at"]);

/** An Idempotency-Key as stored: one API key's use of one value (X-EM-4), naming the message it created. */
export interface IdempotencyRow {
  api_key_id: string;
  key: string;
  request_hash: string;
  email_id: string;
  created_at: string;
}
export const idempotencyKeys = defineTable<IdempotencyRow>()("idempotency_keys", [
  "api_key_id",
  "key",
  "request_hash",
  "email_id",
  "created_at",
]);

export type KeyPermission = "full_access" | "sending_access";
export type KeyMode = "live" | "test";

/** An API key, stored as the SHA-256 of the key with its first characters for display. */
export interface ApiKeyRow {
  id: string;
  name: string;
  prefix: string;
  key_hash: string;
  permission: KeyPermission;
  mode: KeyMode;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}
export const apiKeys = defineTable<ApiKeyRow>()("api_keys", [
  "id",
  "name",
  "prefix",
  "key_hash",
  "permission",
  "mode",
  "created_at",
  "last_used_at",
  "revoked_at",
]);

export type SuppressionReason = "hard_bounce" | "complaint" | "manual";

/** An entry of one mode's suppression list (X-EM-27), keyed by `(test_mode, address_key)`. */
export interface SuppressionRow {
  /** The list the entry is on: test (true) or live (false). */
  test_mode: boolean | number;
  address_key: string;
  address: string;
  reason: SuppressionReason;
  email_id: string | null;
  detail: string | null;
  created_at: string;
}
export const suppressions = defineTable<SuppressionRow>()("suppressions", [
  "test_mode",
  "address_key",
  "address",
  "reason",
  "email_id",
  "detail",
  "created_at",
]);

/** Every table of this module, for the schema test. */
export const EMAIL_TABLES = [
  emails,
  recipients,
  attachments,
  timeline,
  messageLinks,
  linkClicks,
  legacyLinks,
  idempotencyKeys,
  apiKeys,
  suppressions,
] as const;
