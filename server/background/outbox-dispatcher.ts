/**
 * A table of messages to send, each row attempted until sent or given up: the outbox pattern on the
 * leased dispatcher (ADR 0010), for outboxes whose rows are claimed, attempted and recorded one by one
 * (identity's mail, back-channel logout tokens). A claim marks due rows with a fresh lease token and
 * its end; the attempt records the row's outcome under that token, which ends the lease; stopping
 * gives the rows claimed but not started back at once. A dispatcher that dies leaves its leases to
 * run out, and the rows are claimed again then: every row is attempted at least once.
 */
import { randomUUID } from "node:crypto";
import type { Clock } from "../clock.ts";
import { createLeasedDispatcher, type LeasedDispatcher, releaseLeases } from "./leased-dispatcher.ts";

/** A row this dispatcher holds: the token of its lease goes with it to record its outcome. */
export type Leased<Row> = Row & { lease_token: string };

export interface OutboxDispatcherOptions<Row extends { id: string }> {
  clock: Clock;
  /** Attempts in flight at once; also how many rows one claim takes. */
  concurrency: number;
  /** How long a claimed row stays this dispatcher's before another may claim it. */
  leaseMs: number;
  /** How long an idle dispatcher sleeps before it looks for rows that became due by time. */
  pollIntervalMs: number;
  /** The outbox's table. */
  store: OutboxStore<Row>;
  /** One attempt of a row, through to its recorded outcome. */
  attempt(row: Leased<Row>): Promise<void>;
  /** Told of what failed without stopping the loop. */
  onError(err: unknown, phase: "claim" | "attempt" | "release", row?: Leased<Row>): void;
  /** After the dispatcher stopped: closes what the attempts send through (a transport's connections). */
  close?(): Promise<unknown>;
}

/** What an outbox's store does for its dispatcher. */
export interface OutboxStore<Row> {
  /** Marks up to `limit` rows due at `now` with `leaseToken` until `leaseEndsAt` (ISO times), and returns them. */
  claimDue(now: string, leaseToken: string, leaseEndsAt: string, limit: number): Promise<Row[]>;
  /** Gives the rows `ids` back where `leaseToken` still holds them: due at once for another dispatcher. */
  release(ids: string[], leaseToken: string): Promise<unknown>;
}

export interface OutboxDispatcher extends Pick<LeasedDispatcher, "start" | "wake" | "dispatchDue"> {
  /** Stops the dispatcher (its attempts in flight finish), then runs `close`. */
  stop(): Promise<void>;
}

export function createOutboxDispatcher<Row extends { id: string }>(o: OutboxDispatcherOptions<Row>): OutboxDispatcher {
  const iso = (ms: number) => new Date(ms).toISOString();
  const dispatcher = createLeasedDispatcher<Leased<Row>>({
    clock: o.clock,
    concurrency: o.concurrency,
    pollIntervalMs: o.pollIntervalMs,
    window: o.concurrency,
    claimAtLeast: 1,
    async claim(limit) {
      const now = o.clock.now().getTime();
      const leaseToken = randomUUID();
      const rows = await o.store.claimDue(iso(now), leaseToken, iso(now + o.leaseMs), limit);
      return rows.map((r) => ({ ...r, lease_token: leaseToken }));
    },
    attempt: o.attempt,
    release: (rows) =>
      releaseLeases(
        rows.map((r) => ({ id: r.id, leaseToken: r.lease_token })),
        (ids, token) => o.store.release(ids, token),
      ),
    onError: o.onError,
  });
  return {
    start: dispatcher.start,
    wake: dispatcher.wake,
    dispatchDue: dispatcher.dispatchDue,
    async stop() {
      await dispatcher.stop();
      await o.close?.();
    },
  };
}

/**
 * When a row whose attempt number `attempts` (1 for the first) just failed is due again, by the
 * schedule of delays after each failed attempt; undefined once the schedule is spent (the row has failed).
 */
export function nextAttemptAt(retryDelaysMs: readonly number[], attempts: number, nowMs: number): string | undefined {
  const delay = retryDelaysMs[attempts - 1];
  return delay === undefined ? undefined : new Date(nowMs + delay).toISOString();
}
