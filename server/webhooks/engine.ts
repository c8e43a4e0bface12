/**
 * The webhook delivery engine, shared by the services that send webhooks (identity now, email
 * next). Svix's shape: the caller writes its change, the event and the event's deliveries in one
 * transaction (outbox, `enqueue`); a dispatcher claims due deliveries under a lease, signs and POSTs
 * each, and writes one attempt row per try; the endpoint's retry policy decides the next attempt
 * or the final state. Nothing here knows what an endpoint or an event means to its service: the
 * service resolves endpoints (URL, secrets, activity, policy) and builds the bodies.
 *
 * Guarantees: at least once. A delivery claimed by a process that died is claimed again when its
 * lease runs out; a receiver may then see an attempt twice, always with the same delivery id.
 */
import { randomUUID } from "node:crypto";
import type { Knex } from "knex";
import type { Transactor } from "../storage/transaction.ts";
import type { Logger } from "pino";
import type { Clock } from "../clock.ts";
import { uuidv7 } from "./ids.ts";
import type { RetryPolicy } from "./policy.ts";
import { createSender, type AttemptError, type Sender, type SendResult } from "./sender.ts";
import type { SignatureScheme } from "./signatures.ts";
import type { AddressPolicy } from "./ssrf.ts";
import type { AttemptWrite, DeliveryStore } from "./storage/deliveries.ts";
import type { ClaimedRow, Trigger } from "./storage/schema.ts";

/** What the engine needs to know of a subscription when it sends. */
export interface Endpoint {
  id: string;
  url: string;
  /** Valid signing secrets, newest first. */
  secrets: string[];
  active: boolean;
  retryPolicy: RetryPolicy;
}

export interface EngineOptions {
  /** The outbox (createWebhookStorage(…).deliveries, built by the service's composition). */
  queries: DeliveryStore;
  /** Opens the transaction of a manual redelivery. */
  transaction: Transactor;
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
  timers?: { setTimeout: typeof setTimeout; clearTimeout: typeof clearTimeout };
  /** Replaces the HTTP sender (benchmarks, tests of the engine alone). */
  sender?: Sender;
  /** Told the outcome of every attempt (metrics): `success` or the AttemptError. */
  onAttempt?: (outcome: "success" | AttemptError) => void;
}

export interface EnqueueInput {
  /** The delivery id (receivers deduplicate by it). */
  id: string;
  eventId: string;
  endpointId: string;
  eventType: string;
  /** The exact body, sent unchanged on every attempt. */
  body: string;
  /** `event` for deliveries of real events, `test` for test events. */
  trigger: "event" | "test";
  /** Whether failures are retried per the endpoint's policy. */
  autoRetry: boolean;
  /** Sent even if the endpoint is inactive (test events). */
  sendWhenInactive?: boolean;
}

interface Claimed extends ClaimedRow {
  leaseToken: string;
  /** When the lease ends (ms, injected clock). */
  leaseEndsAt: number;
  endpoint: Endpoint | undefined;
}

/** Claimed deliveries kept in memory per attempt slot: claims are batched, not one query per delivery. */
const PREFETCH_PER_SLOT = 4;
/**
 * Claim again once the local queue is down to this many rounds of attempts: the claim then arrives
 * before the slots run dry even when it waits behind a record batch's COMMIT on the dispatch thread.
 */
const REFILL_ROUNDS = 2;

export function createDeliveryEngine(options: EngineOptions) {
  const { queries, transaction, clock, logger } = options;
  const log = logger.child({ component: "webhooks" });
  const timers = options.timers ?? { setTimeout, clearTimeout };
  // A claim may wait one round of attempts in the local queue, then make its own: two time-outs.
  const leaseMs = Math.max(options.leaseMs, 2 * options.timeoutMs + 1000);
  const concurrency = options.concurrency;
  const graceMs = options.shutdownGraceMs ?? Math.min(options.timeoutMs, 5000);
  const iso = (ms = 0) => new Date(clock.now().getTime() + ms).toISOString();

  let sender: Sender =
    options.sender ?? createSender({ policy: options.addressPolicy, timeoutMs: options.timeoutMs, connections: concurrency, timers });

  // Claimed deliveries waiting for a free slot, and the attempts in flight.
  const queue: Claimed[] = [];
  const inFlight = new Map<string, { claimed: Claimed; done: Promise<void> }>();
  let running = false;
  let stopping = false;
  let loop: Promise<void> | undefined;
  let wakeUp: (() => void) | undefined;
  let pollTimer: ReturnType<typeof setTimeout> | undefined;

  /** Ends the dispatcher's wait at once (new work may be due). */
  function wake(): void {
    wakeUp?.();
  }

  function sleep(): Promise<void> {
    return new Promise<void>((resolve) => {
      wakeUp = () => {
        wakeUp = undefined;
        if (pollTimer) timers.clearTimeout(pollTimer);
        pollTimer = undefined;
        resolve();
      };
      pollTimer = timers.setTimeout(() => wakeUp?.(), options.pollIntervalMs);
    });
  }

  /** Claims up to `limit` due deliveries with their endpoints. */
  async function claim(limit: number): Promise<Claimed[]> {
    const leaseToken = randomUUID();
    const leaseEndsAt = clock.now().getTime() + leaseMs;
    const rows = await queries.claimDue(iso(), new Date(leaseEndsAt).toISOString(), leaseToken, limit);
    if (!rows.length) return [];
    const endpoints = await options.resolveEndpoints([...new Set(rows.map((r) => r.endpoint_id))]);
    // The fresh rows become the claims (no copies: a batch is hundreds of rows).
    return rows.map((r) =>
      Object.assign(r, { attempts_made: Number(r.attempts_made), leaseToken, leaseEndsAt, endpoint: endpoints.get(r.endpoint_id) }),
    );
  }

  // --- Writing results: group commit, so a busy dispatcher pays one transaction per batch. ---
  let writes: AttemptWrite[] = [];
  // Callers held back until the batch holding their write is committed (or has failed).
  let waiters: Array<() => void> = [];
  let flushing: Promise<void> | undefined;

  /**
   * Queues an attempt's outcome for the next group commit. The caller's slot is freed at once (the
   * lease still covers the delivery until the write lands); only when writes pile up beyond a few
   * rounds of attempts does the caller wait, so the database sets the pace.
   */
  function record(write: AttemptWrite): Promise<void> | undefined {
    writes.push(write);
    if (!flushing) flushing = flushLoop();
    if (writes.length <= 4 * concurrency) return undefined;
    return new Promise<void>((resolve) => waiters.push(resolve));
  }

  async function flushLoop(): Promise<void> {
    // Linger a little so that a busy dispatcher commits hundreds of attempts at once.
    const lingerUntil = Date.now() + 10;
    while (writes.length < 2 * concurrency && Date.now() < lingerUntil && inFlight.size > 0 && !stopping) {
      await new Promise<void>((r) => setTimeout(r, 2));
    }
    while (writes.length) {
      const batch = writes;
      const held = waiters;
      writes = [];
      waiters = [];
      try {
        await queries.recordAttempts(batch, iso());
      } catch (err) {
        // The deliveries stay leased and are attempted again after the lease: at least once.
        log.error({ err }, "recording webhook attempts failed");
      }
      for (const release of held) release();
    }
    flushing = undefined;
  }

  /** One attempt of a claimed delivery, then its recorded outcome. */
  async function attempt(c: Claimed): Promise<void> {
    const startedAt = clock.now();
    // Waited too long in the local queue (slow receivers): the lease could end mid-attempt and
    // another dispatcher send it too. Let the lease run out instead; it is claimed again then.
    if (startedAt.getTime() + options.timeoutMs + 500 > c.leaseEndsAt) return;
    const endpoint = c.endpoint;
    if (!endpoint || (!endpoint.active && !c.send_when_inactive)) {
      await queries.cancelClaimed(c.id, c.leaseToken, iso());
      return;
    }
    const body = Buffer.from(c.body);
    let result: SendResult;
    try {
      const headers = options.sign({
        deliveryId: c.id,
        eventId: c.event_id,
        eventType: c.event_type,
        timestamp: Math.floor(startedAt.getTime() / 1000),
        body,
        secrets: endpoint.secrets,
      });
      result = await sender.send(endpoint.url, headers, body);
    } catch (err) {
      result = { statusCode: null, success: false, error: "connection_error", errorDetail: String(err), excerpt: null, durationMs: 0 };
    }
    options.onAttempt?.(result.success ? "success" : (result.error ?? "non_2xx"));
    const attemptNumber = c.attempts_made + 1;
    const delay = result.success || !c.auto_retry ? null : endpoint.retryPolicy.nextDelayMs(attemptNumber);
    const nextAttemptAt = delay === null ? null : iso(delay);
    if (!result.success)
      log.info(
        { deliveryId: c.id, attemptNumber, error: result.error, status: result.statusCode, detail: result.errorDetail, nextAttemptAt },
        "webhook attempt failed",
      );
    await record({
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
    });
  }

  /** The running dispatcher's claim in progress, if any (dispatchDue waits for what it brings). */
  let claiming: Promise<unknown> | undefined;

  /** Starts queued deliveries while slots are free. */
  function pump(): void {
    while (!stopping && inFlight.size < concurrency && queue.length) {
      const c = queue.shift()!;
      // Inline arrows: a named closure per attempt would cost a defineProperty under tsx (keepNames).
      const done = attempt(c).then(
        () => settled(c),
        (err) => {
          log.error({ err, deliveryId: c.id }, "webhook attempt failed unexpectedly");
          settled(c);
        },
      );
      inFlight.set(c.id, { claimed: c, done });
    }
  }

  /** Frees an attempt's slot and starts the next queued delivery. */
  function settled(c: Claimed): void {
    inFlight.delete(c.id);
    pump();
    // Claim again once the local queue runs low (REFILL_ROUNDS): batches, not one query per delivery.
    if (queue.length <= REFILL_ROUNDS * concurrency) wake();
  }

  /** Claims more work whenever the local queue runs low; sleeps until woken or the poll interval. */
  async function dispatchLoop(): Promise<void> {
    while (!stopping) {
      let full = false;
      if (queue.length <= REFILL_ROUNDS * concurrency) {
        const want = (PREFETCH_PER_SLOT + 1) * concurrency - queue.length - inFlight.size;
        if (want > 0) {
          try {
            const claimed = claim(want);
            claiming = claimed;
            const batch = await claimed.finally(() => (claiming = undefined));
            if (stopping) {
              await queries.releaseLeases(
                batch.map((c) => c.id),
                batch[0]?.leaseToken ?? "",
              );
              break;
            }
            queue.push(...batch);
            pump();
            full = batch.length === want;
          } catch (err) {
            log.error({ err }, "claiming webhook deliveries failed");
          }
        }
      }
      if (!full || queue.length > REFILL_ROUNDS * concurrency) await sleep();
    }
  }

  /**
   * One round now, awaited: claims what is due (by the injected clock) and waits until those
   * attempts, and those the running dispatcher already claimed, are sent and recorded. For tests
   * and tools; the running dispatcher does the same on its own.
   */
  async function dispatchDue(): Promise<number> {
    let total = 0;
    for (;;) {
      const batch = await claim(concurrency);
      total += batch.length;
      await Promise.all(batch.map((c) => attempt(c).catch((err) => log.error({ err }, "webhook attempt failed unexpectedly"))));
      if (batch.length < concurrency) break;
    }
    // Deliveries the running dispatcher has already claimed (being claimed, queued or in flight)
    // are due too: wait for them, so that when this resolves every due delivery was attempted,
    // whichever dispatcher claimed it.
    while (!stopping && (claiming || inFlight.size > 0)) {
      await claiming?.catch(() => {});
      await Promise.all([...inFlight.values()].map((p) => p.done));
    }
    while (flushing) await flushing.catch(() => {});
    return total;
  }

  return {
    queries,

    /** Records the event itself (the outbox row), in the caller's transaction. */
    recordEvent: (trx: Knex.Transaction, event: { id: string; type: string; data: unknown; createdAt: string }) =>
      queries.insertEvent({ id: event.id, type: event.type, data: JSON.stringify(event.data), created_at: event.createdAt }, trx),

    /** Writes deliveries due now in the caller's transaction, and wakes the dispatcher once it commits. */
    async enqueue(trx: Knex.Transaction, deliveries: EnqueueInput[]): Promise<void> {
      const now = iso();
      await queries.insertDeliveries(
        deliveries.map((d) => ({
          id: d.id,
          event_id: d.eventId,
          endpoint_id: d.endpointId,
          event_type: d.eventType,
          body: d.body,
          status: "pending",
          attempts_made: 0,
          next_attempt_at: now,
          next_trigger: d.trigger satisfies Trigger,
          auto_retry: d.autoRetry,
          send_when_inactive: d.sendWhenInactive ?? false,
          lease_token: null,
          lease_expires_at: null,
          created_at: now,
          updated_at: now,
        })),
        trx,
      );
      if (deliveries.length) wakeAfterCommit(trx);
    },

    /** A manual attempt of an existing delivery, due now; undefined when the endpoint has no such delivery. */
    async redeliver(deliveryId: string, endpointId: string) {
      const now = iso();
      const result = await transaction(async (trx) => {
        const row = await queries.findDelivery(deliveryId, endpointId, trx);
        if (!row) return undefined;
        await queries.scheduleManual(deliveryId, now, trx);
        return { deliveryId, eventType: row.event_type, attemptNumber: Number(row.attempts_made) + 1, scheduledAt: now };
      });
      if (result) wake();
      return result;
    },

    /** Cancels an endpoint's pending deliveries (it was deactivated), in the caller's transaction. */
    cancelEndpoint: (trx: Knex.Transaction, endpointId: string) => queries.cancelEndpoint(endpointId, iso(), trx),
    /** Removes an endpoint's deliveries and history (it was deleted), in the caller's transaction. */
    deleteEndpoint: (trx: Knex.Transaction, endpointId: string) => queries.deleteEndpoint(endpointId, trx),

    wake,
    dispatchDue,

    /** Starts the dispatcher (idempotent). */
    start(): void {
      if (running) return;
      running = true;
      stopping = false;
      loop = dispatchLoop();
    },

    /**
     * Graceful shutdown: claim nothing more, give queued deliveries back, let attempts in flight
     * finish for up to the grace period, then give theirs back too (due at once for another
     * instance) and close the connections.
     */
    async stop(): Promise<void> {
      if (!running) return;
      stopping = true;
      wake();
      await loop;
      const waiting = queue.splice(0);
      for (const [token, ids] of groupByToken(waiting))
        await queries.releaseLeases(ids, token).catch((err) => log.error({ err }, "releasing leases failed"));
      const pending = [...inFlight.values()];
      let timer: ReturnType<typeof setTimeout> | undefined;
      const finished = await Promise.race([
        Promise.all(pending.map((p) => p.done)).then(() => true),
        new Promise<boolean>((r) => (timer = timers.setTimeout(() => r(false), graceMs))),
      ]);
      if (timer) timers.clearTimeout(timer);
      if (!finished) {
        const left = [...inFlight.values()].map((p) => p.claimed);
        for (const [token, ids] of groupByToken(left)) await queries.releaseLeases(ids, token).catch(() => {});
        await sender.destroy().catch(() => {});
      } else {
        await sender.close().catch(() => {});
      }
      while (flushing) await flushing.catch(() => {});
      await queries.close().catch((err) => log.error({ err }, "closing the webhook dispatch thread failed"));
      running = false;
    },

    /** Replaces the sender (tests). */
    setSender(s: Sender) {
      sender = s;
    },
  };

  function wakeAfterCommit(trx: Knex.Transaction): void {
    let top = trx as Knex.Transaction & { parentTransaction?: Knex.Transaction };
    while (top.parentTransaction) top = top.parentTransaction as typeof top;
    top.executionPromise?.then(
      () => wake(),
      () => {},
    );
  }
}

function groupByToken(claimed: Claimed[]): Map<string, string[]> {
  const map = new Map<string, string[]>();
  for (const c of claimed) map.set(c.leaseToken, [...(map.get(c.leaseToken) ?? []), c.id]);
  return map;
}

export type DeliveryEngine = ReturnType<typeof createDeliveryEngine>;
