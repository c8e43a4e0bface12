/**
 * User events, as the rest of the identity service raises them. `publish` runs inside the
 * transaction of the change that caused the event (the outbox rule): the event and its deliveries
 * commit or roll back with the change. The webhook area provides the implementation.
 */
import type { Tx } from "../../../server/storage/transaction.ts";

export type UserEventType = "user.created" | "user.updated" | "user.deleted";

export interface UserEvent {
  type: UserEventType;
  /** The applications whose webhooks receive it. */
  applicationIds: string[];
  data: Record<string, unknown>;
}

export interface EventSink {
  publish(trx: Tx, event: UserEvent): Promise<void>;
}
