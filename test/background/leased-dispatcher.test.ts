/**
 * server/background/leased-dispatcher.ts over an in-memory table of leased jobs, on a frozen
 * ManualClock: the concurrency limit, batched claims, sleeping on the clock, waking, and the graceful
 * stop (release, grace period, abandon).
 */
import { describe, expect, it } from "vitest";
import { createLeasedDispatcher, type LeasedDispatcherOptions } from "../../server/background/leased-dispatcher.ts";
import { ManualClock } from "../../server/clock.ts";

const turns = async (n = 10) => {
  for (let i = 0; i < n; i++) await new Promise((resolve) => setImmediate(resolve));
};

interface Job {
  id: string;
  token: number;
}

/** A table of jobs, due from `dueAt`, leased for LEASE_MS by a claim. */
function jobTable(clock: ManualClock) {
  const LEASE_MS = 60_000;
  const rows = new Map<string, { dueAt: number; leasedUntil: number; token: number; done: boolean }>();
  let nextToken = 0;
  const claims: Array<{ limit: number; got: number }> = [];
  let claimGate: Promise<void> | undefined;
  return {
    rows,
    claims,
    add(id: string, dueInMs = 0) {
      rows.set(id, { dueAt: clock.now().getTime() + dueInMs, leasedUntil: 0, token: -1, done: false });
    },
    /** The next claim waits until the returned function is called. */
    holdNextClaim(): () => void {
      let open = () => {};
      claimGate = new Promise<void>((r) => (open = r));
      return open;
    },
    /** Leases up to `limit` due jobs; a held claim has read its rows before it waits (as a query that ran). */
    async claim(limit: number): Promise<Job[]> {
      const now = clock.now().getTime();
      const token = nextToken++;
      const due = [...rows].filter(([, r]) => !r.done && r.dueAt <= now && r.leasedUntil <= now).slice(0, limit);
      for (const [, r] of due) Object.assign(r, { leasedUntil: now + LEASE_MS, token });
      claims.push({ limit, got: due.length });
      const gate = claimGate;
      claimGate = undefined;
      await gate;
      return due.map(([id]) => ({ id, token }));
    },
    async release(jobs: Job[]) {
      for (const j of jobs) {
        const r = rows.get(j.id)!;
        if (r.token === j.token) r.leasedUntil = 0;
      }
    },
    finish(job: Job) {
      rows.get(job.id)!.done = true;
    },
  };
}

/** Attempts that stay open until the test ends them, with the most in flight at once. */
function heldAttempts() {
  const open = new Map<string, () => void>();
  const started: string[] = [];
  let most = 0;
  return {
    open,
    started,
    most: () => most,
    attempt(job: Job, finish: () => void): Promise<void> {
      started.push(job.id);
      return new Promise<void>((resolve) => {
        open.set(job.id, () => {
          open.delete(job.id);
          finish();
          resolve();
        });
        most = Math.max(most, open.size);
      });
    },
    endAll() {
      for (const end of [...open.values()]) end();
    },
  };
}

/** Starts the dispatcher's stop: `finished()` is what it resolved with, undefined while it still waits. */
function beginStop(dispatcher: { stop(): Promise<boolean> }) {
  let finished: boolean | undefined;
  const settled = dispatcher.stop().then((f) => {
    finished = f;
  });
  return { settled, finished: () => finished };
}

/** A dispatcher over a fresh table: concurrency 2, window 4, claims of at least 2, polls every 1000 ms of a frozen clock. */
function setup(
  overrides: (t: {
    table: ReturnType<typeof jobTable>;
    attempts: ReturnType<typeof heldAttempts>;
  }) => Partial<LeasedDispatcherOptions<Job>> = () => ({}),
) {
  const clock = new ManualClock();
  clock.freeze();
  const table = jobTable(clock);
  const attempts = heldAttempts();
  const errors: string[] = [];
  let idle = 0;
  const dispatcher = createLeasedDispatcher<Job>({
    clock,
    concurrency: 2,
    pollIntervalMs: 1000,
    window: 4,
    claimAtLeast: 2,
    claim: (limit) => table.claim(limit),
    attempt: (job) => attempts.attempt(job, () => table.finish(job)),
    release: (jobs) => table.release(jobs),
    onIdle: () => idle++,
    onError: (err, phase) => errors.push(`${phase}: ${(err as Error).message}`),
    ...overrides({ table, attempts }),
  });
  return { clock, table, attempts, errors, dispatcher, idle: () => idle };
}

describe("leased dispatcher", () => {
  it("attempts every due job once, never more than `concurrency` at a time, claiming in batches that fill the window", async () => {
    const { table, attempts, dispatcher, idle } = setup();
    for (let i = 0; i < 10; i++) table.add(`j${i}`);
    dispatcher.start();
    await turns();
    // The window (4) claimed at once, two of them in flight.
    expect(table.claims[0]).toEqual({ limit: 4, got: 4 });
    expect(attempts.open.size).toBe(2);
    while (attempts.started.length < 10 || attempts.open.size) {
      attempts.open.values().next().value?.();
      await turns(3);
    }
    expect(attempts.most()).toBe(2);
    expect([...attempts.started].sort()).toEqual(Array.from({ length: 10 }, (_, i) => `j${i}`).sort());
    // Claims only when at least claimAtLeast (2) fit: never one job at a time.
    expect(table.claims.every((c) => c.limit >= 2)).toBe(true);
    expect(idle()).toBeGreaterThanOrEqual(1);
    await dispatcher.stop();
  });

  it("sleeps pollIntervalMs on the injected clock when nothing is due; wake() ends the sleep at once", async () => {
    const { clock, table, attempts, dispatcher } = setup();
    dispatcher.start();
    await turns();
    expect(table.claims).toHaveLength(1);
    expect(clock.pendingTimers).toBe(1);
    table.add("later");
    await turns(20);
    expect(table.claims).toHaveLength(1);
    clock.advance(999);
    await turns();
    expect(table.claims).toHaveLength(1);
    clock.advance(1);
    await turns();
    expect(attempts.started).toEqual(["later"]);
    attempts.endAll();
    await turns();
    table.add("woken");
    dispatcher.wake();
    await turns();
    expect(attempts.started).toEqual(["later", "woken"]);
    attempts.endAll();
    await dispatcher.stop();
  });

  it("a wake that comes while a claim runs is kept: the loop claims again instead of sleeping", async () => {
    const { table, attempts, dispatcher } = setup();
    dispatcher.start();
    await turns();
    const open = table.holdNextClaim();
    dispatcher.wake();
    await turns();
    // The claim found nothing and has not returned yet; meanwhile new work is committed and wakes the loop.
    table.add("during");
    dispatcher.wake();
    open();
    await turns();
    expect(attempts.started).toEqual(["during"]);
    // Not by a poll: the clock never moved.
    expect(table.claims.length).toBeGreaterThanOrEqual(3);
    attempts.endAll();
    await dispatcher.stop();
  });

  it("stop claims nothing more, gives queued jobs back and waits for the attempts in flight", async () => {
    const { table, attempts, dispatcher } = setup(() => ({ concurrency: 1, window: 3, claimAtLeast: 1 }));
    for (let i = 0; i < 3; i++) table.add(`j${i}`);
    dispatcher.start();
    await turns();
    expect(attempts.open.size).toBe(1);
    const stop = beginStop(dispatcher);
    await turns();
    expect(stop.finished()).toBeUndefined();
    // The two queued jobs are due again at once for another dispatcher.
    expect([...table.rows.values()].filter((r) => r.leasedUntil === 0).length).toBe(2);
    attempts.endAll();
    await stop.settled;
    expect(stop.finished()).toBe(true);
    expect(attempts.started).toEqual(["j0"]);
    const claimsAtStop = table.claims.length;
    await turns();
    expect(table.claims).toHaveLength(claimsAtStop);
  });

  it("past the grace period on the clock, stop hands the attempts still in flight to abandon and waits for them to end", async () => {
    const abandoned: string[] = [];
    const { clock, table, attempts, dispatcher } = setup(({ attempts }) => ({
      shutdownGraceMs: 500,
      abandon: async (jobs) => {
        abandoned.push(...jobs.map((j) => j.id));
        attempts.endAll();
      },
    }));
    table.add("slow");
    dispatcher.start();
    await turns();
    expect(attempts.open.size).toBe(1);
    const stop = beginStop(dispatcher);
    await turns();
    clock.advance(499);
    await turns();
    expect(stop.finished()).toBeUndefined();
    expect(abandoned).toEqual([]);
    clock.advance(1);
    await stop.settled;
    expect(stop.finished()).toBe(false);
    expect(abandoned).toEqual(["slow"]);
  });

  it("without release, jobs a claim brings while stopping are still attempted, and stop waits for them", async () => {
    const { table, attempts, dispatcher } = setup(() => ({ release: undefined }));
    dispatcher.start();
    await turns();
    const open = table.holdNextClaim();
    table.add("late");
    dispatcher.wake();
    await turns();
    const stop = beginStop(dispatcher);
    open();
    await turns();
    expect(attempts.started).toEqual(["late"]);
    expect(stop.finished()).toBeUndefined();
    attempts.endAll();
    await stop.settled;
  });

  it("dispatchDue attempts what is due now, and waits for what the running loop already holds", async () => {
    const { table, attempts, dispatcher } = setup();
    table.add("held-by-loop");
    dispatcher.start();
    await turns();
    expect(attempts.open.has("held-by-loop")).toBe(true);
    table.add("due-now");
    let total: number | undefined;
    const due = dispatcher.dispatchDue().then((n) => (total = n));
    await turns();
    expect(total).toBeUndefined();
    // Ending the loop's attempt lets dispatchDue claim; the loop may race it for the new job.
    while (total === undefined) {
      attempts.endAll();
      await turns(2);
    }
    await due;
    expect([...attempts.started].sort()).toEqual(["due-now", "held-by-loop"]);
    expect([...table.rows.values()].every((r) => r.done)).toBe(true);
    await dispatcher.stop();
  });

  it("a failed claim or attempt is reported and the loop goes on", async () => {
    let failNext = true;
    const { table, errors, dispatcher } = setup(({ table }) => ({
      claim: async (limit) => {
        if (failNext) {
          failNext = false;
          throw new Error("claim broke");
        }
        return table.claim(limit);
      },
      attempt: async (job) => {
        table.finish(job);
        if (job.id === "bad") throw new Error("attempt broke");
      },
    }));
    table.add("bad");
    table.add("good");
    dispatcher.start();
    await turns();
    dispatcher.wake();
    await turns();
    expect(errors).toEqual(["claim: claim broke", "attempt: attempt broke"]);
    expect([...table.rows.values()].every((r) => r.done)).toBe(true);
    await dispatcher.stop();
  });
});
