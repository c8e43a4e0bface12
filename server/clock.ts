/**
 * Time as a dependency. What reads the time (expiry rules: 1-hour tokens, 10-minute codes) and what
 * waits for it (a batch's linger, a dispatcher's poll interval, a shutdown's grace period, an
 * attempt's time limit) take one Clock, so a test moves time by hand instead of waiting for it.
 */
export interface Clock {
  now(): Date;
  /** Calls `fn` once, when this clock has moved `ms` on. */
  setTimeout(fn: () => void, ms: number): Timer;
  /** Cancels a timer of this clock; one that already ran, or undefined, is ignored. */
  clearTimeout(timer: Timer | undefined): void;
}

declare const timerBrand: unique symbol;
/** A pending call made by a Clock's `setTimeout`: only that clock knows what is inside. */
export type Timer = { readonly [timerBrand]: "Timer" };

/** The waiting half of a Clock, for what never reads the time. */
export type Timers = Pick<Clock, "setTimeout" | "clearTimeout">;

export const systemClock: Clock = {
  now: () => new Date(),
  setTimeout: (fn, ms) => setTimeout(fn, ms) as unknown as Timer,
  clearTimeout: (timer) => clearTimeout(timer as unknown as NodeJS.Timeout | undefined),
};

interface ManualTimer {
  fn: () => void;
  /** When it is due, in ms on this clock. */
  dueMs: number;
  /** Order of creation: timers due at the same time run in the order they were set. */
  seq: number;
  /** The real timer that runs it while real time moves this clock (not frozen). */
  real: NodeJS.Timeout | undefined;
}

/**
 * A clock tests move by hand. It starts at the real time and moves with it until `freeze`; `advance`
 * moves it on at once. Its timers run when the clock reaches their time, whichever moved it: real
 * time (a real timer stands behind each while the clock is not frozen), or `advance`, which runs
 * every timer it made due before it returns, in the order they fall due.
 */
export class ManualClock implements Clock {
  private offsetMs = 0;
  private frozenAtMs: number | undefined;
  private readonly pending = new Set<ManualTimer>();
  private nextSeq = 0;

  now(): Date {
    return new Date((this.frozenAtMs ?? Date.now()) + this.offsetMs);
  }

  /** How many timers wait on this clock (a test can tell that a loop has gone to sleep on it). */
  get pendingTimers(): number {
    return this.pending.size;
  }

  setTimeout(fn: () => void, ms: number): Timer {
    const timer: ManualTimer = { fn, dueMs: this.now().getTime() + Math.max(0, ms), seq: this.nextSeq++, real: undefined };
    this.pending.add(timer);
    this.followRealTime(timer);
    return timer as unknown as Timer;
  }

  clearTimeout(timer: Timer | undefined): void {
    const t = timer as unknown as ManualTimer | undefined;
    if (!t || !this.pending.delete(t)) return;
    clearTimeout(t.real);
  }

  advance(ms: number): void {
    this.offsetMs += ms;
    this.runDue();
    for (const t of this.pending) this.followRealTime(t);
  }

  /** From now on only `advance` moves it: rules counted in seconds stay exact however slowly the machine runs. */
  freeze(): void {
    this.frozenAtMs ??= Date.now();
    for (const t of this.pending) this.followRealTime(t);
  }

  /**
   * While real time moves this clock, a real timer runs `t` when it is due (set again if it fired a
   * little early). Frozen, only a timer already due runs without `advance`: on the next turn, as a
   * real one of 0 ms would.
   */
  private followRealTime(t: ManualTimer): void {
    clearTimeout(t.real);
    t.real = undefined;
    const left = t.dueMs - this.now().getTime();
    if (this.frozenAtMs !== undefined && left > 0) return;
    t.real = setTimeout(
      () => {
        t.real = undefined;
        if (!this.pending.has(t)) return;
        if (t.dueMs <= this.now().getTime()) this.runDue();
        else this.followRealTime(t);
      },
      Math.max(0, left),
    );
  }

  /** Runs the due timers one by one, earliest first; a timer set by one of them runs too if it is due. */
  private runDue(): void {
    for (;;) {
      const now = this.now().getTime();
      let next: ManualTimer | undefined;
      for (const t of this.pending) {
        if (t.dueMs > now) continue;
        if (!next || t.dueMs < next.dueMs || (t.dueMs === next.dueMs && t.seq < next.seq)) next = t;
      }
      if (!next) return;
      this.pending.delete(next);
      clearTimeout(next.real);
      next.fn();
    }
  }
}
