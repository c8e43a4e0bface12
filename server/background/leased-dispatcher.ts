/**
 * One leased dispatch loop: the outbox pattern's sending half (ADR 0004, ADR 0010). Work waits in a
 * table; a dispatcher claims due rows under a lease (a token and an end time written on them: no
 * other dispatcher takes them while it lasts), attempts each with at most `concurrency` attempts
 * in flight, and each attempt records its outcome, which ends the lease. A dispatcher that died
 * leaves its leases to run out; the rows are claimed again then. So every job is attempted at least
 * once, and a job is attempted twice only when its holder died or its lease ran out mid-attempt.
 *
 * What a claim, an attempt and a release are belongs to the user (the webhook engine, email's
 * outbound); this module owns when they run:
 * - claims are batched: the dispatcher holds up to `window` jobs (queued and in flight) and claims
 *   again once at least `claimAtLeast` fit, so a busy dispatcher makes one claim per batch of
 *   finished attempts, not one per attempt;
 * - a claim that brought all it asked for is followed by another at once (more may be due);
 *   otherwise the loop sleeps until `wake()` (new work was committed, or a slot freed) or until
 *   `pollIntervalMs` on the injected clock (work that became due by time). A wake that comes while
 *   the loop is busy is kept, never lost;
 * - `stop()` claims nothing more, gives queued jobs back (`release`), lets attempts in flight finish
 *   for up to `shutdownGraceMs` on the clock, then hands those left to `abandon` (give their leases
 *   back, cut their connections) and waits for them to end.
 */
import type { Timer, Timers } from "../clock.ts";

export interface LeasedDispatcherOptions<Job> {
  clock: Timers;
  /** Attempts in flight at once. */
  concurrency: number;
  /** How long an idle loop sleeps before it looks for due work again. */
  pollIntervalMs: number;
  /** Jobs held at once, queued and in flight (at least `concurrency`): more than the slots means claims run ahead of the attempts. */
  window: number;
  /** A claim is made only when at least this many jobs fit in the window. */
  claimAtLeast: number;
  /** Claims up to `limit` due jobs under a fresh lease. */
  claim(limit: number): Promise<Job[]>;
  /** One attempt of a claimed job, through to its recorded outcome. A throw is reported to `onError`; the job's lease then runs out. */
  attempt(job: Job): Promise<void>;
  /**
   * Gives the leases of claimed jobs back, due at once for another dispatcher (on stop, for jobs not
   * attempted). Without it, jobs claimed are always attempted, also while stopping.
   */
  release?(jobs: Job[]): Promise<void>;
  /** How long `stop()` lets attempts in flight finish; without it, as long as they take. */
  shutdownGraceMs?: number;
  /** After the grace period: ends the attempts still in flight (give their leases back, cut their connections). */
  abandon?(jobs: Job[]): Promise<void>;
  /** Told when no attempt runs and none is queued to start (a batch of outcomes need not wait for more). */
  onIdle?(): void;
  /** Told of what failed without stopping the loop: a claim, an attempt (with its job), a release. */
  onError(err: unknown, phase: "claim" | "attempt" | "release", job?: Job): void;
}

export interface LeasedDispatcher {
  /** Starts the loop (idempotent). */
  start(): void;
  /** Ends the loop's sleep at once: new work was committed. */
  wake(): void;
  /**
   * Claims and attempts what is due now, round after round until a claim finds nothing, and waits
   * for what the running loop has claimed: when it resolves, every due job was attempted, whoever
   * claimed it. Resolves with the number of jobs it claimed itself (tests and tools).
   */
  dispatchDue(): Promise<number>;
  /** Graceful stop (see the module comment); true if every attempt in flight finished within the grace period. */
  stop(): Promise<boolean>;
}

export function createLeasedDispatcher<Job>(options: LeasedDispatcherOptions<Job>): LeasedDispatcher {
  const { clock, concurrency, window, claimAtLeast } = options;
  if (window < concurrency || claimAtLeast < 1 || claimAtLeast > window)
    throw new Error("need concurrency <= window and 1 <= claimAtLeast <= window");
  /** Claimed jobs waiting for a free slot. */
  const queue: Job[] = [];
  const inFlight = new Map<Job, Promise<void>>();
  let running = false;
  let stopping = false;
  let loop: Promise<void> | undefined;
  /** The loop's claim in progress: its jobs are leased but not yet queued. */
  let claiming: Promise<Job[]> | undefined;
  let endSleep: (() => void) | undefined;
  let woken = false;
  /** Told when the last attempt in flight ends (stop waits for it). */
  let onDrained: (() => void) | undefined;

  const room = () => window - queue.length - inFlight.size;
  const startsWhileStopping = !options.release;

  function wake(): void {
    if (endSleep) endSleep();
    else woken = true;
  }

  function sleep(): Promise<void> {
    if (woken) {
      woken = false;
      return Promise.resolve();
    }
    return new Promise<void>((resolve) => {
      const timer: Timer = clock.setTimeout(end, options.pollIntervalMs);
      function end(): void {
        clock.clearTimeout(timer);
        endSleep = undefined;
        woken = false;
        resolve();
      }
      endSleep = end;
    });
  }

  /** Attempts running, the loop's and dispatchDue's. */
  let attempting = 0;

  /**
   * One attempt; never rejects (a failure is reported, and the job's lease runs out). `then` runs
   * before the attempt stops counting, so that a slot refilled at once never looks idle.
   */
  function run(job: Job, then?: () => void): Promise<void> {
    attempting++;
    return options
      .attempt(job)
      .catch((err) => options.onError(err, "attempt", job))
      .then(() => {
        then?.();
        if (--attempting === 0) options.onIdle?.();
      });
  }

  /** Starts queued jobs while slots are free. */
  function pump(): void {
    while (inFlight.size < concurrency && queue.length && (!stopping || startsWhileStopping)) {
      const job = queue.shift()!;
      inFlight.set(
        job,
        run(job, () => settled(job)),
      );
    }
  }

  function settled(job: Job): void {
    inFlight.delete(job);
    pump();
    if (!inFlight.size) onDrained?.();
    if (room() >= claimAtLeast) wake();
  }

  async function claimInto(limit: number): Promise<number> {
    let batch: Job[] = [];
    try {
      claiming = options.claim(limit);
      batch = await claiming;
    } catch (err) {
      options.onError(err, "claim");
    } finally {
      claiming = undefined;
    }
    if (stopping && options.release && batch.length) {
      await options.release(batch).catch((err) => options.onError(err, "release"));
      return batch.length;
    }
    queue.push(...batch);
    pump();
    return batch.length;
  }

  async function dispatchLoop(): Promise<void> {
    while (!stopping) {
      const want = room();
      if (want >= claimAtLeast && (await claimInto(want)) === want) continue;
      if (!stopping) await sleep();
    }
  }

  /** Waits until the running loop's claim and attempts have ended. */
  async function settleRunning(): Promise<void> {
    while (!stopping && (claiming || inFlight.size)) {
      await claiming?.catch(() => {});
      await Promise.all(inFlight.values());
    }
  }

  /** Resolves true when no attempt is in flight (and none is queued to start), false when `graceMs` ran out first. */
  function drained(graceMs: number | undefined): Promise<boolean> {
    if (!inFlight.size) return Promise.resolve(true);
    return new Promise<boolean>((resolve) => {
      let timer: Timer | undefined;
      onDrained = () => {
        onDrained = undefined;
        clock.clearTimeout(timer);
        resolve(true);
      };
      if (graceMs !== undefined)
        timer = clock.setTimeout(() => {
          onDrained = undefined;
          resolve(false);
        }, graceMs);
    });
  }

  return {
    wake,

    start() {
      if (running) return;
      running = true;
      stopping = false;
      loop = dispatchLoop();
    },

    async dispatchDue() {
      await settleRunning();
      let total = 0;
      for (;;) {
        const batch = await options.claim(concurrency);
        if (!batch.length) break;
        total += batch.length;
        await Promise.all(batch.map((job) => run(job)));
      }
      await settleRunning();
      return total;
    },

    async stop() {
      if (!running) return true;
      stopping = true;
      wake();
      await loop;
      const waiting = options.release ? queue.splice(0) : [];
      if (waiting.length) await options.release!(waiting).catch((err) => options.onError(err, "release"));
      const finished = await drained(options.shutdownGraceMs);
      if (!finished) {
        const left = [...inFlight.keys()];
        await options.abandon?.(left).catch((err) => options.onError(err, "release"));
        await Promise.all(inFlight.values());
      }
      running = false;
      return finished;
    },
  };
}

/** A claimed job as `releaseLeases` sees it: its id and the token of the lease it was claimed under. */
export interface Leased {
  id: string;
  leaseToken: string;
}

/**
 * Gives the leases of `jobs` back (where still theirs), one call of `releaseLeases` per lease token:
 * jobs of several claims hold several leases. Every lease is tried; the first failure is thrown once
 * all were.
 */
export async function releaseLeases(jobs: Leased[], releaseLeases: (ids: string[], leaseToken: string) => Promise<unknown>): Promise<void> {
  const byToken = new Map<string, string[]>();
  for (const job of jobs) byToken.set(job.leaseToken, [...(byToken.get(job.leaseToken) ?? []), job.id]);
  let failure: { err: unknown } | undefined;
  for (const [token, ids] of byToken) {
    try {
      await releaseLeases(ids, token);
    } catch (err) {
      failure ??= { err };
    }
  }
  if (failure) throw failure.err;
}
