/**
 * The audit log's security events as webhook events (X-ID-AUD-7): which types are delivered, to
 * which applications, and with what `data`. `deliver` runs in the transaction that writes the
 * audit row, so the event reaches the outbox exactly when it reaches the log.
 */
import type { Tx } from "../../../server/storage/transaction.ts";
import type { ApplicationStore } from "../storage/applications.ts";
import type { AuditEventRow } from "../storage/schema.ts";
import type { SecurityEventType, UserEvent } from "./events.ts";

/** The types webhooks can subscribe to, in the catalogue's order. `user.created/updated/deleted` keep their own payloads. */
export const SECURITY_EVENT_TYPES: readonly SecurityEventType[] = [
  "user.signed_in",
  "user.sign_in_failed",
  "user.second_factor_failed",
  "user.recovery_code_used",
  "user.password_changed",
  "user.factor_enrolled",
  "user.factor_removed",
  "user.recovery_codes_regenerated",
  "session.ended",
  "user.password_reset",
];

export const isSecurityEvent = (type: string): type is SecurityEventType => (SECURITY_EVENT_TYPES as readonly string[]).includes(type);

/** Publishes one event to the outbox in `trx` (the webhook area's sink). */
export type PublishEvent = (trx: Tx, event: UserEvent) => Promise<void>;

export function createAuditWebhooks(deps: { publish: PublishEvent; applications: ApplicationStore }) {
  const { publish, applications } = deps;

  /**
   * The webhooks that receive an event: its application's; for an event of the account itself
   * (no application) every application the user has used, as `user.updated` goes.
   */
  async function recipients(row: AuditEventRow, trx: Tx): Promise<string[]> {
    if (row.application_id) return [row.application_id];
    return row.user_id ? applications.ofUser(row.user_id, trx) : [];
  }

  /** Delivers a just-written audit row when its type is a security event (else nothing). */
  async function deliver(trx: Tx, row: AuditEventRow): Promise<void> {
    if (!isSecurityEvent(row.type)) return;
    const applicationIds = await recipients(row, trx);
    if (!applicationIds.length) return;
    await publish(trx, { type: row.type, applicationIds, data: securityEventData(row) });
  }

  return { deliver };
}

/** A delivery's `data`: the audit event's fields as the API shows them; `details` was cleared of secrets when recorded. */
export function securityEventData(row: AuditEventRow): Record<string, unknown> {
  return {
    auditEventId: row.id,
    actor: { type: row.actor_type, id: row.actor_id },
    userId: row.user_id,
    applicationId: row.application_id,
    clientAddress: row.client_address,
    userAgent: row.user_agent,
    details: JSON.parse(row.details) as Record<string, unknown>,
  };
}

export type AuditWebhooks = ReturnType<typeof createAuditWebhooks>;
