/** What the email service counts of its own (X-API-11): outbound send attempts by outcome, and the outbound queue. */
import type { Clock } from "../../server/clock.ts";
import {
  outcomeCounter,
  QUEUE_READ_CACHE_MS,
  type QueueSummary,
  queueGauges,
  type ServiceMetrics,
} from "../../server/observability/metrics.ts";
import { SMTP_OUTCOME_KINDS } from "./mail/reply.ts";

/** Outcomes of one outbound send: what the SMTP exchange meant (mail/reply.ts), or `error` for an attempt that failed on our side. */
export const EMAIL_SEND_OUTCOMES = [...SMTP_OUTCOME_KINDS, "error"] as const;

/** `email_send_attempts_total` by outcome, and the outbound queue's depth and lateness. */
export function emailOutboundMetrics(
  metrics: ServiceMetrics,
  read: () => Promise<QueueSummary>,
  clock: Clock,
  cacheMs = QUEUE_READ_CACHE_MS,
) {
  const count = outcomeCounter(
    metrics,
    "email_send_attempts_total",
    "Outbound send attempts (one SMTP transaction per copy), by outcome.",
    EMAIL_SEND_OUTCOMES,
  );
  queueGauges(
    metrics,
    "email_outbound",
    {
      depth: "Outbound copies (one per recipient) pending: due, in flight, or waiting for a scheduled retry.",
      age: "Seconds since the most overdue pending outbound copy became due (0 when none is due: a copy waiting for its scheduled retry is not late).",
    },
    read,
    clock,
    cacheMs,
  );
  return { attempt: (outcome: string) => count(outcome) };
}
