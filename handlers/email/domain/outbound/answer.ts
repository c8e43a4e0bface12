/**
 * What an SMTP answer means for a copy (X-EM status table): 2xx delivered, 5xx bounced (hard or
 * soft), 4xx and connection failures retried on the schedule, then a soft bounce (the receiving
 * server kept deferring) or `Failed` (the relay never took it). Written in the caller's
 * transaction, under the copy's lease.
 */
import type { Clock } from "../../../../server/clock.ts";
import type { Tx } from "../../../../server/storage/transaction.ts";
import type { SmtpOutcome } from "../../mail/reply.ts";
import type { MessageStore } from "../../storage/messages.ts";
import type { Outcomes } from "../outcomes.ts";
import type { ClaimedCopy } from "./claim.ts";

export function answerMeaning(options: {
  clock: Clock;
  queries: Pick<MessageStore, "updateLeased">;
  outcomes: Outcomes;
  /** Delays after failed attempt 1, 2, …; one attempt more than delays. */
  retryDelaysMs: readonly number[];
}) {
  const { clock, queries, outcomes, retryDelaysMs: delays } = options;
  const maxAttempts = delays.length + 1;

  /** Applies `answer` to the copy's `attempts`-th attempt. */
  return async function apply(trx: Tx, copy: ClaimedCopy, answer: SmtpOutcome, attempts: number): Promise<void> {
    const lease = { leaseToken: copy.lease_token, attempts };
    const reply = { smtpResponse: answer.smtpResponse, smtpStatus: answer.smtpStatus };
    switch (answer.kind) {
      case "delivered":
        await outcomes.apply(trx, copy.id, { kind: "delivered", ...reply }, lease);
        return;
      case "hard_bounce":
      case "soft_bounce":
        await outcomes.apply(
          trx,
          copy.id,
          { kind: "bounced", bounceType: answer.kind === "hard_bounce" ? "hard" : "soft", errorMessage: answer.smtpResponse, ...reply },
          lease,
        );
        return;
      case "retry":
      case "relay_failure": {
        if (attempts >= maxAttempts) {
          const change =
            answer.kind === "retry"
              ? ({ kind: "bounced", bounceType: "soft", errorMessage: answer.smtpResponse, ...reply } as const)
              : ({ kind: "failed", errorMessage: answer.smtpResponse, smtpResponse: answer.smtpResponse } as const);
          await outcomes.apply(trx, copy.id, change, lease);
          return;
        }
        const next = new Date(clock.now().getTime() + delays[attempts - 1]!).toISOString();
        const still = await queries.updateLeased(
          copy.id,
          copy.lease_token,
          {
            status: "Queued",
            attempts,
            next_attempt_at: next,
            lease_token: null,
            lease_expires_at: null,
            smtp_response: answer.smtpResponse,
            smtp_status: answer.smtpStatus,
            updated_at: clock.now().toISOString(),
          },
          trx,
        );
        if (still)
          await outcomes.note(trx, copy, "email.deferred", {
            errorMessage: answer.smtpResponse,
            ...(answer.smtpStatus ? { smtpStatus: answer.smtpStatus } : {}),
          });
        return;
      }
    }
  };
}

export type ApplyAnswer = ReturnType<typeof answerMeaning>;
