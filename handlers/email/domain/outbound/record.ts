/**
 * Outbound's record phase: answers committed in batches (server/background/batcher.ts), so that a
 * busy dispatcher pays one COMMIT (on SQLite an fsync on the event loop) per batch of answers, not
 * one per copy (ADR 0010).
 *
 * - A batch lingers up to GATHER_MS on the injected clock after its first answer, and leaves at
 *   once when half the slots hold an answer or when no other answer is on its way: the other half
 *   of the slots keep the relay's connections fed meanwhile.
 * - Each answer is written in a savepoint of its own, so a failing one is undone alone; its copy
 *   stays leased and is sent again after the lease (at least once). A batch whose COMMIT fails
 *   leaves all of its copies so.
 * - The answers of a batch are written in message order: each locks its message's row (the derived
 *   status), and two instances taking those locks in different orders deadlock on PostgreSQL.
 * - An attempt is answered only after the COMMIT that holds its outcome.
 */
import type { Logger } from "pino";
import { allDone, createBatcher } from "../../../../server/background/batcher.ts";
import type { Clock } from "../../../../server/clock.ts";
import { savepoint, type Transactor } from "../../../../server/storage/transaction.ts";
import type { SmtpOutcome } from "../../mail/reply.ts";
import type { MessageStore } from "../../storage/messages.ts";
import type { Outcomes } from "../outcomes.ts";
import type { ApplyAnswer } from "./answer.ts";
import type { ClaimedCopy } from "./claim.ts";

/** How long answers wait for others before their batch commits. */
const GATHER_MS = 20;

export interface AnswerWrite {
  copy: ClaimedCopy;
  answer: SmtpOutcome;
  /** The attempt's number. */
  attempts: number;
  startedAt: string;
}

export function createAnswerRecorder(options: {
  transaction: Transactor;
  clock: Clock;
  logger: Logger;
  queries: Pick<MessageStore, "insertTimeline">;
  outcomes: Outcomes;
  apply: ApplyAnswer;
  concurrency: number;
}) {
  const { transaction, queries, outcomes, apply, logger: log } = options;
  /** Attempts whose answer has not come yet: while there are some, a batch may still grow. */
  let expected = 0;

  const batcher = createBatcher<AnswerWrite, void>({
    when: "linger",
    lingerMs: GATHER_MS,
    maxItems: Math.max(1, Math.floor(options.concurrency / 2)),
    clock: options.clock,
    async flush(writes) {
      const inMessageOrder = [...writes].sort((a, b) =>
        a.copy.email_id < b.copy.email_id ? -1 : a.copy.email_id > b.copy.email_id ? 1 : 0,
      );
      try {
        await transaction(async (trx) => {
          for (const write of inMessageOrder) {
            try {
              await savepoint(trx, async (sp) => {
                await queries.insertTimeline([outcomes.timeline(write.copy, "email.sent", write.startedAt, {})], sp);
                await apply(sp, write.copy, write.answer, write.attempts);
              });
            } catch (err) {
              log.error({ err, recipientId: write.copy.id }, "recording an answer failed; the copy is sent again after its lease");
            }
          }
        });
      } catch (err) {
        log.error({ err, copies: writes.length }, "committing answers failed; the copies are sent again after their leases");
      }
      return allDone(writes);
    },
  });

  return {
    /**
     * An attempt begins: its answer may still join the forming batch. Call the function returned
     * once the attempt has its answer, or will have none (more than once is harmless).
     */
    expectAnswer(): () => void {
      expected++;
      let open = true;
      return () => {
        if (!open) return;
        open = false;
        // No answer on its way: nothing more can join the forming batch.
        if (--expected === 0) batcher.flushNow();
      };
    },
    /** Resolves once the batch holding `write` is committed (or failed: then the copy's lease runs out). */
    commit: (write: AnswerWrite): Promise<void> => batcher.add(write),
  };
}

export type AnswerRecorder = ReturnType<typeof createAnswerRecorder>;
