/**
 * What the email service deletes, and when (docs/operations.md, "Data growth"; X-EM-25). Each rule's
 * condition is served by an index (migrations 0002, 0006 and 0010; checked by
 * test/email/retention.test.ts):
 * - messages, once every copy has its outcome (no copy `Queued` or `Sent`), this long after they
 *   were sent; deleting one deletes its copies, their links, its timeline, attachments and
 *   idempotency key (foreign keys with ON DELETE CASCADE, each on an indexed column);
 * - Idempotency-Key entries once their 24-hour window is over (a reuse after it is a new send);
 * - the webhook history, as in every service that delivers webhooks.
 * Suppressions and API keys are never purged: they are the account's own records.
 */
import type { PurgeRule } from "../../../server/storage/retention.ts";
import { webhookHistoryRules } from "../../../server/webhooks/retention-rules.ts";
import { IDEMPOTENCY_WINDOW_MS } from "./messages.ts";

const before = (now: Date, ms: number) => new Date(now.getTime() - ms).toISOString();

/** How long messages and the webhook history are kept, in seconds (handlers/email/config.ts). */
export interface EmailRetentionPeriods {
  messagesSeconds: number;
  webhookHistorySeconds: number;
}

export function emailRetentionRules(periods: EmailRetentionPeriods): PurgeRule[] {
  return [
    {
      name: "messages",
      table: "emails",
      key: "id",
      // The status is the copies' (X-EM-6): Queued or Sent while any copy still waits or is in flight.
      expired: (now) => ({
        sql: "created_at < ? AND status NOT IN ('Queued', 'Sent')",
        bindings: [before(now, periods.messagesSeconds * 1000)],
      }),
      orderBy: "created_at",
    },
    {
      name: "idempotency keys",
      table: "idempotency_keys",
      // The message it created names an entry (unique, 0010); the key value alone is each API key's own (X-EM-4).
      key: "email_id",
      expired: (now) => ({ sql: "created_at < ?", bindings: [before(now, IDEMPOTENCY_WINDOW_MS)] }),
      orderBy: "created_at",
    },
    ...webhookHistoryRules(periods.webhookHistorySeconds),
  ];
}
