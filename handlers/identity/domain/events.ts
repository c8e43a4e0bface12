/**
 * User events, as the rest of the identity service raises them. `publish` runs inside the
 * transaction of the change that caused the event (the outbox rule): the event and its deliveries
 * commit or roll back with the change. The webhook area provides the implementation.
 */
import type { Tx } from "../../../server/storage/transaction.ts";

export type UserEventType = "user.created" | "user.updated" | "user.deleted";

/** The audit log's security events that webhooks receive too (X-ID-AUD-7, domain/audit-webhooks.ts). */
export type SecurityEventType =
  | "user.signed_in"
  | "user.sign_in_failed"
  | "user.second_factor_failed"
  | "user.recovery_code_used"
  | "user.password_changed"
  | "user.factor_enrolled"
  | "user.factor_removed"
  | "user.recovery_codes_regenerated"
  | "session.ended"
  | "user.password_reset";

/** Every type a webhook can subscribe to. */
export type WebhookEventType = UserEventType | SecurityEventType;

export interface UserEvent {
  type: WebhookEventType;
  /** The applications whose webhooks receive it. */
  applicationIds: string[];
  data: Record<string, unknown>;
}

export interface EventSink {
  publish(trx: Tx, event: UserEvent): Promise<void>;
}
