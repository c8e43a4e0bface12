/**
 * The webhook delivery engine, shared by the services that send webhooks (identity, email). Svix's
 * shape: the caller writes its change, the event and the event's deliveries in one transaction (the
 * outbox); a dispatcher claims due deliveries under a lease, signs and POSTs each, and writes one
 * attempt row per try; the endpoint's retry policy decides the next attempt or the final state.
 * Nothing here knows what an endpoint or an event means to its service: the service resolves
 * endpoints (URL, secrets, activity, policy) and builds the bodies.
 *
 * Guarantees: at least once. A delivery claimed by a process that died is claimed again when its
 * lease runs out; a receiver may then see an attempt twice, always with the same delivery id.
 *
 * The phases, one module each: `engine/outbox.ts` (the caller's writes), `engine/claim.ts`,
 * `engine/attempt.ts` (what an attempt is and what its answer means), `engine/record.ts` (outcomes
 * written in batches). The loop that runs them, its wake-ups, sleeps and graceful stop, is
 * server/background/leased-dispatcher.ts; every timer of it runs on the injected clock.
 */
import type { Logger } from "pino";
import { createLeasedDispatcher } from "../background/leased-dispatcher.ts";
import type { Clock } from "../clock.ts";
import type { Transactor } from "../storage/transaction.ts";
import { answerMeaning, type Endpoint, endpointTakes, leaseCoversAttempt, sendDelivery } from "./engine/attempt.ts";
import { type Claimed, deliveryClaimer, releaseClaims } from "./engine/claim.ts";
import { createOutbox } from "./engine/outbox.ts";
import { createAttemptRecorder } from "./engine/record.ts";
import { type AttemptError, createSender, type Sender } from "./sender.ts";
import type { SignatureScheme } from "./signatures.ts";
import type { AddressPolicy } from "./ssrf.ts";
import type { DeliveryStore } from "./storage/deliveries.ts";

export type { Endpoint } from "./engine/attempt.ts";
export type { EnqueueInput } from "./engine/outbox.ts";

export interface EngineOptions {
  /** The outbox (createWebhookStorage(…).deliveries, built by the service's composition). */
  queries: DeliveryStore;
  /** Opens the transaction of a manual redelivery. */
  transaction: Transactor;
  /** Reads the time of leases and schedules, and runs every timer: poll interval, linger, time limit, grace period. */
  clock: Clock;
  logger: Logger;
  /** Headers that sign an attempt. */
  sign: SignatureScheme;
  /** The endpoints of a batch of deliveries; a missing one means deleted. */
  resolveEndpoints(ids: string[]): Promise<Map<string, Endpoint>>;
  addressPolicy: AddressPolicy;
  timeoutMs: number;
  /** Lease of a claimed delivery; raised to cover a full wait in the local queue plus the attempt. */
  leaseMs: number;
  pollIntervalMs: number;
  /** Attempts in flight at once in this process. */
  concurrency: number;
  /** How long `stop()` lets in-flight attempts finish before giving their deliveries back. Default min(timeout, 5 s). */
  shutdownGraceMs?: number;
  /** Replaces the HTTP sender (benchmarks, tests of the engine alone). */
  sender?: Sender;
  /** Told the outcome of every attempt (metrics): `success` or the AttemptError. */
  onAttempt?: (outcome: "success" | AttemptError) => void;
}

/** Claimed deliveries held per attempt slot beyond the one in flight: claims are batched, not one query per delivery. */
const PREFETCH_PER_SLOT = 4;
/**
 * Claim again once the local queue is down to this many rounds of attempts: the claim then arrives
 * before the slots run dry even when it waits behind a record batch's COMMIT on the dispatch thread.
 */
const REFILL_ROUNDS = 2;

export function createDeliveryEngine(options: EngineOptions) {
  const { queries, clock, concurrency, timeoutMs } = options;
  const log = options.logger.child({ component: "webhooks" });
  // A claim may wait one round of attempts in the local queue, then make its own: two time-outs.
  const leaseMs = Math.max(options.leaseMs, 2 * timeoutMs + 1000);

  let sender: Sender =
    options.sender ?? createSender({ policy: options.addressPolicy, timeoutMs, connections: concurrency, timers: clock });
  const recorder = createAttemptRecorder({ queries, clock, concurrency, log });

  /** One attempt of a claimed delivery, then its recorded outcome. */
  async function attempt(c: Claimed): Promise<void> {
    const startedAt = clock.now();
    if (!leaseCoversAttempt(c, startedAt.getTime(), timeoutMs)) return;
    if (!endpointTakes(c)) {
      await queries.cancelClaimed(c.id, c.leaseToken, startedAt.toISOString());
      return;
    }
    const result = await sendDelivery(c, startedAt, options.sign, sender);
    options.onAttempt?.(result.success ? "success" : (result.error ?? "non_2xx"));
    const write = answerMeaning(c, result, startedAt, clock);
    if (!result.success)
      log.info(
        {
          deliveryId: c.id,
          attemptNumber: write.attempt.attempt_number,
          error: result.error,
          status: result.statusCode,
          detail: result.errorDetail,
          nextAttemptAt: write.delivery.nextAttemptAt,
        },
        "webhook attempt failed",
      );
    await recorder.record(write);
  }

  const dispatcher = createLeasedDispatcher<Claimed>({
    clock,
    concurrency,
    pollIntervalMs: options.pollIntervalMs,
    window: (PREFETCH_PER_SLOT + 1) * concurrency,
    // Room for that many rounds: the local queue is down to REFILL_ROUNDS rounds with every slot busy.
    claimAtLeast: (PREFETCH_PER_SLOT - REFILL_ROUNDS) * concurrency,
    claim: deliveryClaimer({ queries, clock, leaseMs, resolveEndpoints: options.resolveEndpoints }),
    attempt,
    release: (claimed) => releaseClaims(queries, claimed),
    shutdownGraceMs: options.shutdownGraceMs ?? Math.min(timeoutMs, 5000),
    // Past the grace period: due at once for another instance, and the connections cut.
    async abandon(claimed) {
      await releaseClaims(queries, claimed).catch((err) => log.error({ err }, "releasing leases failed"));
      await sender.destroy().catch(() => {});
    },
    // Nothing more can join the forming batch of outcomes.
    onIdle: () => recorder.flushNow(),
    onError(err, phase, claimed) {
      if (phase === "claim") log.error({ err }, "claiming webhook deliveries failed");
      else if (phase === "release") log.error({ err }, "releasing leases failed");
      else log.error({ err, deliveryId: claimed?.id }, "webhook attempt failed unexpectedly");
    },
  });

  const outbox = createOutbox({ queries, transaction: options.transaction, clock, wake: dispatcher.wake });
  let running = false;

  return {
    queries,
    ...outbox,
    wake: dispatcher.wake,

    /**
     * One round now, awaited: claims what is due (by the injected clock) and waits until those
     * attempts, and those the running dispatcher already claimed, are sent and recorded. For tests
     * and tools; the running dispatcher does the same on its own.
     */
    async dispatchDue(): Promise<number> {
      const total = await dispatcher.dispatchDue();
      await recorder.drain();
      return total;
    },

    /** Starts the dispatcher (idempotent). */
    start(): void {
      running = true;
      dispatcher.start();
    },

    /**
     * Graceful shutdown: claim nothing more, give queued deliveries back, let attempts in flight
     * finish for up to the grace period, then give theirs back too (due at once for another
     * instance) and close the connections.
     */
    async stop(): Promise<void> {
      if (!running) return;
      running = false;
      const finished = await dispatcher.stop();
      if (finished) await sender.close().catch(() => {});
      await recorder.drain();
      await queries.close().catch((err) => log.error({ err }, "closing the webhook dispatch thread failed"));
    },

    /** Replaces the sender (tests). */
    setSender(s: Sender) {
      sender = s;
    },
  };
}

export type DeliveryEngine = ReturnType<typeof createDeliveryEngine>;
