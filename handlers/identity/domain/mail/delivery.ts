/**
 * Delivery of the mail outbox (X-ID-MAIL-2): the outbox dispatcher of server/background (ADR 0010)
 * claims due messages under a lease, hands each to the transport, and records the answer under the
 * same lease: sent, due again after the next delay of the schedule, or failed once the schedule is
 * spent or the receiver refused it for good. Every timer runs on the injected clock. A dispatcher
 * that dies leaves its leases to run out; the messages are claimed again then, so a message is
 * sent at least once, and twice only when its holder died or its lease ran out mid-attempt (the
 * email service transport then deduplicates on the message id, its Idempotency-Key).
 */
import type { Logger } from "pino";
import { createOutboxDispatcher, type Leased, nextAttemptAt } from "../../../../server/background/outbox-dispatcher.ts";
import type { Clock } from "../../../../server/clock.ts";
import type { MailOutboxRow, MailOutboxStore } from "../../storage/mail-outbox.ts";
import type { DeliveryAnswer, MailTransport } from "./messages.ts";

/** Delays after failed attempt 1, 2, …: 7 attempts over about 3 h 42 min, within a reset link's day of use. */
export const DEFAULT_MAIL_RETRY_DELAYS_MS = [30_000, 120_000, 600_000, 1_800_000, 3_600_000, 7_200_000];

export interface MailDeliveryOptions {
  clock: Clock;
  logger: Logger;
  outbox: MailOutboxStore;
  transport: MailTransport;
  retryDelaysMs: readonly number[];
  /** Whether a sent message keeps its bodies (the local mailbox shows them; X-ID-MAIL-5). */
  keepBodies: boolean;
  concurrency?: number;
  leaseMs?: number;
  pollIntervalMs?: number;
}

/** A message this dispatcher holds the lease of. */
type Claimed = Leased<MailOutboxRow>;

const ERROR_LENGTH = 1000;

export function createMailDelivery(options: MailDeliveryOptions) {
  const { clock, outbox, transport, retryDelaysMs, keepBodies } = options;
  const log = options.logger.child({ component: "mail" });
  const iso = (ms: number) => new Date(ms).toISOString();

  async function attempt(row: Claimed): Promise<void> {
    let answer: DeliveryAnswer;
    try {
      answer = await transport.send({
        id: row.id,
        to: row.recipient,
        subject: row.subject,
        text: row.text_body ?? "",
        html: row.html_body ?? "",
      });
    } catch (err) {
      answer = { kind: "retry", error: err instanceof Error ? err.message : String(err) };
    }
    const attempts = row.attempts + 1;
    const now = clock.now().getTime();
    if (answer.kind === "sent") {
      await outbox.markSent(row.id, row.lease_token, iso(now), { attempts, lastError: null }, keepBodies);
      log.info({ mailId: row.id, template: row.template, attempts }, "mail sent");
      return;
    }
    const outcome = { attempts, lastError: answer.error.slice(0, ERROR_LENGTH) };
    const retryAt = answer.kind === "failed" ? undefined : nextAttemptAt(retryDelaysMs, attempts, now);
    if (retryAt === undefined) {
      await outbox.markFailed(row.id, row.lease_token, iso(now), outcome);
      log.error({ mailId: row.id, template: row.template, attempts, error: outcome.lastError }, "mail failed for good");
      return;
    }
    await outbox.reschedule(row.id, row.lease_token, retryAt, outcome);
    log.warn({ mailId: row.id, template: row.template, attempts, error: outcome.lastError, retryAt }, "mail attempt failed; retrying");
  }

  return createOutboxDispatcher<MailOutboxRow>({
    clock,
    concurrency: options.concurrency ?? 4,
    leaseMs: options.leaseMs ?? 120_000,
    pollIntervalMs: options.pollIntervalMs ?? 5_000,
    store: outbox,
    attempt,
    close: async () => transport.close?.(),
    onError(err, phase, row) {
      log.error({ err, phase, mailId: row?.id }, "mail dispatch failed unexpectedly");
    },
  });
}

export type MailDelivery = ReturnType<typeof createMailDelivery>;
