/**
 * What happens to a recipient's copy, applied in one transaction: the status move (only those the
 * status machine allows, so a duplicate or late report changes nothing), the timeline entry, the
 * suppression a hard bounce or a complaint causes (EM-8, EM-9), and the webhook event (EM-4). The
 * dispatcher, the bounce and complaint intake and tracking all go through here.
 */
import { uuidv7 } from "../../../server/ids.ts";
import type { Tx } from "../../../server/storage/transaction.ts";
import type { Clock } from "../../../server/clock.ts";
import type { MessageStore, RecipientRow, TimelineRow } from "../storage/messages.ts";
import { eventData, type EventPublisher, type WebhookEventType } from "./events.ts";
import { canMove, type EmailStatus, messageStatus } from "./status.ts";
import type { Suppressions } from "./suppressions.ts";

export type Change =
  | { kind: "delivered"; smtpResponse?: string | null; smtpStatus?: string | null }
  | { kind: "bounced"; bounceType: "hard" | "soft"; errorMessage: string; smtpResponse?: string | null; smtpStatus?: string | null }
  | { kind: "complained"; feedbackType: string }
  | { kind: "failed"; errorMessage: string; smtpResponse?: string | null }
  | { kind: "suppressed"; errorMessage: string };

const TARGET: Record<Change["kind"], EmailStatus> = {
  delivered: "Delivered",
  bounced: "Bounced",
  complained: "Complained",
  failed: "Failed",
  suppressed: "Suppressed",
};

const WEBHOOK_TYPE: Partial<Record<Change["kind"], WebhookEventType>> = {
  delivered: "email.delivered",
  bounced: "email.bounced",
  complained: "email.complained",
};

export function createOutcomes(deps: { clock: Clock; queries: MessageStore; suppressions: Suppressions; events: EventPublisher }) {
  const { queries, suppressions, events } = deps;

  /** A timeline row; for webhook event types its id is the event's (published by the caller). */
  const timeline = (
    recipient: RecipientRow,
    type: string,
    at: string,
    data: Record<string, unknown>,
    id: string = uuidv7(Date.parse(at)),
  ): TimelineRow => ({
    id,
    email_id: recipient.email_id,
    recipient_id: recipient.id,
    type,
    data: JSON.stringify(data),
    created_at: at,
  });

  /**
   * Applies `change` to the copy as it is now in `trx` (read again there, and written only if still
   * so: concurrent outcomes see each other's effect, whichever commits first, on PostgreSQL too).
   * `leaseToken`, when given, must still be the copy's: an attempt whose lease ran out no longer
   * owns the copy. Returns whether anything changed.
   */
  async function apply(
    trx: Tx,
    recipientId: string,
    change: Change,
    options: { leaseToken?: string; attempts?: number } = {},
  ): Promise<boolean> {
    // Decided on the copy as read, written only if it is still so; otherwise a concurrent outcome
    // committed first (on PostgreSQL this transaction waited for it) and the move is decided again
    // on the copy as it is now. So whichever of two outcomes commits first, the status machine
    // judges the second against the first: a late Delivered never overwrites Complained, and a
    // complaint that waited for the Delivered still moves it on.
    for (;;) {
      const recipient = await queries.findRecipient(recipientId, trx);
      if (!recipient) return false;
      if (options.leaseToken !== undefined && recipient.lease_token !== options.leaseToken) return false;
      const target = TARGET[change.kind];
      if (!canMove(recipient.status, target)) return false;
      // Gone between the two reads: the retention purge deleted the message (X-EM-25); nothing to change.
      // Locked before the copy is written (lockEmail: the purge's lock order).
      const email = await queries.lockEmail(recipient.email_id, trx);
      if (!email) return false;
      const at = deps.clock.now().toISOString();

      const patch: Partial<RecipientRow> = {
        status: target,
        updated_at: at,
        next_attempt_at: null,
        lease_token: null,
        lease_expires_at: null,
        ...(options.attempts !== undefined ? { attempts: options.attempts } : {}),
      };
      const detail: Record<string, unknown> = {};
      switch (change.kind) {
        case "delivered":
          if (change.smtpResponse) patch.smtp_response = change.smtpResponse;
          if (change.smtpStatus) patch.smtp_status = change.smtpStatus;
          if (change.smtpStatus) detail.smtpStatus = change.smtpStatus;
          break;
        case "bounced":
          Object.assign(patch, { bounce_type: change.bounceType, error_message: change.errorMessage });
          if (change.smtpResponse) patch.smtp_response = change.smtpResponse;
          if (change.smtpStatus) patch.smtp_status = change.smtpStatus;
          Object.assign(detail, {
            errorMessage: change.errorMessage,
            bounceType: change.bounceType,
            ...(change.smtpStatus ? { smtpStatus: change.smtpStatus } : {}),
          });
          break;
        case "complained":
          detail.feedbackType = change.feedbackType;
          break;
        case "failed":
          patch.error_message = change.errorMessage;
          if (change.smtpResponse) patch.smtp_response = change.smtpResponse;
          detail.errorMessage = change.errorMessage;
          break;
        case "suppressed":
          patch.error_message = change.errorMessage;
          detail.errorMessage = change.errorMessage;
          break;
      }
      if (!(await queries.moveRecipient(recipient.id, { status: recipient.status, leaseToken: recipient.lease_token }, patch, trx)))
        continue;
      await queries.setDerivedStatus(email.id, at, messageStatus, trx);
      const updated = { ...recipient, ...patch } as RecipientRow;

      const type = WEBHOOK_TYPE[change.kind];
      const test = Boolean(email.test_mode);
      const eventId = type ? await events.publish(trx, type, eventData(email, updated, type), at, test) : uuidv7(Date.parse(at));
      await queries.insertTimeline([timeline(updated, `email.${change.kind}`, at, detail, eventId)], trx);

      // On the list of the message's mode (X-EM-27).
      if (change.kind === "bounced" && change.bounceType === "hard") {
        await suppressions.add(trx, {
          test,
          address: recipient.address,
          reason: "hard_bounce",
          emailId: email.id,
          detail: change.errorMessage,
        });
      }
      if (change.kind === "complained") {
        await suppressions.add(trx, {
          test,
          address: recipient.address,
          reason: "complaint",
          emailId: email.id,
          detail: `Feedback-Type: ${change.feedbackType}`,
        });
      }
      return true;
    }
  }

  return {
    apply,
    timeline,
    /** A timeline entry with no status change (deferred, delayed, feedback, sent). */
    note: (trx: Tx, recipient: RecipientRow, type: string, data: Record<string, unknown>) =>
      queries.insertTimeline([timeline(recipient, type, deps.clock.now().toISOString(), data)], trx),
  };
}

export type Outcomes = ReturnType<typeof createOutcomes>;
