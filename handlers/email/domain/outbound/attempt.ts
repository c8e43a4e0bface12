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

export interface AttemptOptions {
  transaction: Transactor;
  clock: Clock;
  logger: Logger;
  outcomes: Outcomes;
  suppressions: Suppressions;
  compose<T>(recipient: RecipientRow, use: (copy: OutgoingCopy) => Promise<T>): Promise<T>;
  send(transport: Transport, copy: OutgoingCopy): Promise<SmtpOutcome>;
  answers: AnswerRecorder;
  onAttempt?: (outcome: SmtpOutcome["kind"] | "error") => void;
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
