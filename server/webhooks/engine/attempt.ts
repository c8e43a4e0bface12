/**
 * The engine's attempt phase: what one attempt of a delivery is (signed headers, one POST) and what
 * its answer means (the endpoint's retry policy decides the next attempt, or the final state). The
 * result is the write the record phase commits (record.ts).
 */
import type { Clock } from "../../clock.ts";
import { uuidv7 } from "../ids.ts";
import type { RetryPolicy } from "../policy.ts";
import type { Sender, SendResult } from "../sender.ts";
import type { SignatureScheme } from "../signatures.ts";
import type { AttemptWrite } from "../storage/deliveries.ts";
import type { Claimed } from "./claim.ts";

/** What the engine needs to know of a subscription when it sends. */
export interface Endpoint {
  id: string;
  url: string;
  /** Valid signing secrets, newest first. */
  secrets: string[];
  active: boolean;
  retryPolicy: RetryPolicy;
}

/** Room left before a lease ends for an attempt to start: its time limit, and this much for recording it. */
const RECORD_MARGIN_MS = 500;

/**
 * Whether `c` may still be attempted at `now`: one that waited too long in the local queue (slow
 * receivers) could see its lease end mid-attempt and another dispatcher send it too. Such a
 * delivery is left to its lease, and claimed again when it ends.
 */
export function leaseCoversAttempt(c: Claimed, now: number, timeoutMs: number): boolean {
  return now + timeoutMs + RECORD_MARGIN_MS <= c.leaseEndsAt;
}

/** Whether `c` goes out: its endpoint exists and is active, or it is sent even to an inactive one (test events). Otherwise it is cancelled. */
export function endpointTakes(c: Claimed): c is Claimed & { endpoint: Endpoint } {
  return c.endpoint !== undefined && (c.endpoint.active || Boolean(c.send_when_inactive));
}

/** Signs and POSTs `c` to its endpoint; a failure to sign or send is an answer too (connection_error). */
export async function sendDelivery(
  c: Claimed & { endpoint: Endpoint },
  startedAt: Date,
  sign: SignatureScheme,
  sender: Sender,
): Promise<SendResult> {
  const body = Buffer.from(c.body);
  try {
    const headers = sign({
      deliveryId: c.id,
      eventId: c.event_id,
      eventType: c.event_type,
      timestamp: Math.floor(startedAt.getTime() / 1000),
      body,
      secrets: c.endpoint.secrets,
    });
    return await sender.send(c.endpoint.url, headers, body);
  } catch (err) {
    return { statusCode: null, success: false, error: "connection_error", errorDetail: String(err), excerpt: null, durationMs: 0 };
  }
}

/**
 * What an answer means: the attempt row, and the delivery's next state. A 2xx succeeds; a failure is
 * retried when the delivery retries automatically and the endpoint's policy gives a delay, else final.
 */
export function answerMeaning(c: Claimed & { endpoint: Endpoint }, result: SendResult, startedAt: Date, clock: Clock): AttemptWrite {
  const attemptNumber = c.attempts_made + 1;
  const delay = result.success || !c.auto_retry ? null : c.endpoint.retryPolicy.nextDelayMs(attemptNumber);
  const nextAttemptAt = delay === null ? null : new Date(clock.now().getTime() + delay).toISOString();
  return {
    leaseToken: c.leaseToken,
    attempt: {
      id: uuidv7(),
      delivery_id: c.id,
      endpoint_id: c.endpoint_id,
      event_id: c.event_id,
      event_type: c.event_type,
      attempt_number: attemptNumber,
      trigger: c.next_trigger,
      status_code: result.statusCode,
      success: result.success,
      error: result.error ?? null,
      error_detail: result.errorDetail?.slice(0, 500) ?? null,
      response_excerpt: result.excerpt,
      duration_ms: result.durationMs,
      attempted_at: startedAt.toISOString(),
      next_attempt_at: nextAttemptAt,
    },
    delivery: {
      status: result.success ? "succeeded" : nextAttemptAt ? "pending" : "failed",
      attemptsMade: attemptNumber,
      nextAttemptAt,
      nextTrigger: "retry",
    },
  };
}
