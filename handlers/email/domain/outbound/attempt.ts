/**
 * Outbound's attempt phase: what one attempt of a claimed copy is. A copy whose recipient was
 * suppressed since it was accepted is never sent; any other is composed and handed to its transport,
 * one SMTP transaction per copy, and its answer goes to the record phase. The attempt's slot stays
 * taken until the answer is committed, so copies sent but not yet recorded (the ones a crash would
 * send twice) stay within the concurrency.
 */
import type { Logger } from "pino";
import type { Clock } from "../../../../server/clock.ts";
import type { Transactor } from "../../../../server/storage/transaction.ts";
import type { OutgoingCopy } from "../../mail/compose.ts";
import type { SmtpOutcome } from "../../mail/reply.ts";
import type { RecipientRow, Transport } from "../../storage/messages.ts";
import type { Outcomes } from "../outcomes.ts";
import type { Suppressions } from "../suppressions.ts";
import type { ClaimedCopy } from "./claim.ts";
import type { AnswerRecorder } from "./record.ts";

/** What an attempt sends with, as outbound.ts is given it (OutboundOptions extends it). */
export interface SendOptions {
  /** Opens the service's transactions (the plain transactor of its database). */
  transaction: Transactor;
  /** Reads the time of leases and retries, and runs every timer: poll interval, the answers' gathering. */
  clock: Clock;
  logger: Logger;
  outcomes: Outcomes;
  suppressions: Suppressions;
  /**
   * Builds a copy's MIME input from its rows (the message's content, tracking, VERP) and runs `use`
   * with it: what the copies of one message share stays held while one of them is being sent.
   */
  compose<T>(recipient: RecipientRow, use: (copy: OutgoingCopy) => Promise<T>): Promise<T>;
  send(transport: Transport, copy: OutgoingCopy): Promise<SmtpOutcome>;
  /** Told the outcome of every send (metrics): the SMTP answer's meaning, or `error` when the attempt failed on our side. */
  onAttempt?: (outcome: SmtpOutcome["kind"] | "error") => void;
}

export interface AttemptOptions extends SendOptions {
  /** The record phase, which commits the answers. */
  answers: AnswerRecorder;
}

/** One attempt of one claimed copy, start to recorded outcome. Never throws: a failure leaves the copy to its lease. */
export function copyAttempt(options: AttemptOptions): (copy: ClaimedCopy) => Promise<void> {
  const { transaction, clock, outcomes, suppressions, answers } = options;
  return async (copy) => {
    const answered = answers.expectAnswer();
    try {
      const startedAt = clock.now().toISOString();
      // Suppressed since it was accepted (a complaint about an earlier message, say): never sent.
      // The list of the message's mode (X-EM-27), read with it in one statement.
      const suppressed = await suppressions.ofCopy(copy);
      if (suppressed) {
        await transaction((trx) =>
          outcomes.apply(
            trx,
            copy.id,
            { kind: "suppressed", errorMessage: `The recipient was suppressed (${suppressed.reason}) after the message was accepted.` },
            { leaseToken: copy.lease_token },
          ),
        );
        return;
      }
      const answer = await options.compose(copy, (outgoing) => options.send(copy.transport, outgoing));
      options.onAttempt?.(answer.kind);
      const recorded = answers.commit({ copy, answer, attempts: Number(copy.attempts) + 1, startedAt });
      answered();
      await recorded;
    } catch (err) {
      // A bug or a database failure: the lease runs out and another attempt picks the copy up.
      options.onAttempt?.("error");
      options.logger.error({ err, recipientId: copy.id }, "outbound attempt failed unexpectedly");
    } finally {
      answered();
    }
  };
}
