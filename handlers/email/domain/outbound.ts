/**
 * The outbound dispatcher: copies accepted by messages.ts wait in their table (the outbox) and go
 * out through server/background/leased-dispatcher.ts, the loop the webhook engine runs on too. The
 * phases are outbound/claim.ts (copies leased to this dispatcher), outbound/attempt.ts (one SMTP
 * transaction per copy), outbound/answer.ts (what an answer means) and outbound/record.ts (answers
 * committed in batches). Every timer runs on the injected clock.
 *
 * At least once towards the relay: a crash between the relay's 250 and the COMMIT of the outcome
 * sends that copy again after the lease; never zero times.
 */
import { createLeasedDispatcher } from "../../../server/background/leased-dispatcher.ts";
import type { MessageStore } from "../storage/messages.ts";
import { answerMeaning } from "./outbound/answer.ts";
import { copyAttempt, type SendOptions } from "./outbound/attempt.ts";
import { copyClaimer } from "./outbound/claim.ts";
import { createAnswerRecorder } from "./outbound/record.ts";

/** Delays after failed attempt 1, 2, …: 8 attempts over about 7 h 51 min (X-EM-16). */
export const DEFAULT_RETRY_DELAYS_MS = [60_000, 300_000, 900_000, 1_800_000, 3_600_000, 7_200_000, 14_400_000];

export interface OutboundOptions extends SendOptions {
  queries: MessageStore;
  concurrency: number;
  leaseMs: number;
  pollIntervalMs: number;
  retryDelaysMs?: readonly number[];
}

export function createOutbound(options: OutboundOptions) {
  const { transaction, clock, queries, outcomes, concurrency } = options;
  const log = options.logger.child({ component: "outbound" });
  const apply = answerMeaning({ clock, queries, outcomes, retryDelaysMs: options.retryDelaysMs ?? DEFAULT_RETRY_DELAYS_MS });
  const answers = createAnswerRecorder({ transaction, clock, logger: log, queries, outcomes, apply, concurrency });

  const dispatcher = createLeasedDispatcher({
    clock,
    concurrency,
    pollIntervalMs: options.pollIntervalMs,
    // No queue ahead of the slots: a copy is claimed when a slot can take it.
    window: concurrency,
    // Claim in batches, once half the slots are free: one claim per half-round of sends rather than
    // one per finished send (each claim is a write, and on SQLite a COMMIT).
    claimAtLeast: Math.max(1, Math.floor(concurrency / 2)),
    claim: copyClaimer({ queries, clock, leaseMs: options.leaseMs }),
    attempt: copyAttempt({ ...options, logger: log, answers }),
    // No release and no grace period: stop() lets every attempt finish (its transport times out on its own).
    onError(err, phase, copy) {
      if (phase === "claim") log.error({ err }, "claiming due copies failed");
      else log.error({ err, recipientId: copy?.id }, "outbound attempt failed unexpectedly");
    },
  });

  return {
    /** Wakes the dispatcher: copies were committed. */
    wake: dispatcher.wake,
    /** Runs every copy due now to its outcome, and waits for those the running dispatcher holds (tests and tools). */
    dispatchDue: dispatcher.dispatchDue,
    start: dispatcher.start,
    /** Claims nothing more and lets attempts in flight finish (their transports time out on their own). */
    async stop(): Promise<void> {
      await dispatcher.stop();
    },
  };
}

export type Outbound = ReturnType<typeof createOutbound>;
