/**
 * One batcher: callers hand it an item each and get a promise that settles once the batch that
 * carried their item has been flushed. A flush is a group commit, a record batch, one message to
 * a worker thread: whatever costs the same for one item as for many (an fsync, a round trip), so
 * that many callers share it.
 *
 * When a batch leaves:
 * - `turn`: the items added in one turn of the event loop leave together (`setImmediate`: a turn
 *   is not time, so no clock drives it);
 * - `linger`: a batch waits up to `lingerMs` on the injected clock after its first item, and
 *   leaves at once when it holds `maxItems` or when the owner calls `flushNow()` (nothing more
 *   can join it: no attempt that could add one is running).
 *
 * Rules:
 * - One flush at a time: a batch ready while another is being flushed leaves when that one ends,
 *   so batches are flushed in the order they were formed and items in the order they came.
 * - Each caller learns its own outcome: the flush answers one `ItemOutcome` per item, in order,
 *   and a caller whose item failed gets that error alone. A flush that throws failed the whole
 *   batch: every caller of the batch gets its error.
 * - A caller is answered only after the flush that holds its item settled, never before.
 */
import type { Timer, Timers } from "../clock.ts";

/** What one item of a flushed batch came to: its own value, or its own failure. */
export type ItemOutcome<R> = { ok: true; value: R } | { ok: false; error: unknown };

export const itemDone = <R>(value: R): ItemOutcome<R> => ({ ok: true, value });
export const itemFailed = (error: unknown): ItemOutcome<never> => ({ ok: false, error });
/** Every item of `items` done with no value: a flush whose callers only wait for it. */
export const allDone = (items: readonly unknown[]): ItemOutcome<void>[] => items.map(() => itemDone(undefined));

export type FlushTrigger = { when: "turn" } | { when: "linger"; lingerMs: number; maxItems: number; clock: Timers };

export type BatcherOptions<Item, Result> = FlushTrigger & {
  /**
   * Flushes one batch: resolves with one outcome per item, in the items' order; throwing (or
   * rejecting) fails every item of the batch with that error. A caller may leave its promise
   * unawaited only if the flush never fails its item.
   */
  flush(items: Item[]): Promise<ItemOutcome<Result>[]>;
};

export interface Batcher<Item, Result> {
  /** Adds `item` to the forming batch; settles with its outcome once that batch is flushed. */
  add(item: Item): Promise<Result>;
  /** Items added and not yet handed to a flush (what a caller may pace itself by). */
  readonly waiting: number;
  /** The forming batch leaves now, or as soon as the running flush ends: no linger, no waiting for the turn. */
  flushNow(): void;
  /** Flushes what is waiting at once and resolves when nothing waits and no flush runs. */
  drain(): Promise<void>;
}

interface Waiting<Item, Result> {
  item: Item;
  resolve(value: Result): void;
  reject(err: unknown): void;
}

export function createBatcher<Item, Result>(options: BatcherOptions<Item, Result>): Batcher<Item, Result> {
  let forming: Waiting<Item, Result>[] = [];
  let flushing: Promise<void> | undefined;
  /** The forming batch may leave: its turn came, its linger ran out, it is full, or flushNow was called. */
  let ready = false;
  /** The linger timer of the forming batch (linger only). */
  let timer: Timer | undefined;

  /** Starts the forming batch's clock: the end of this turn, or its linger. */
  function armTrigger(): void {
    if (options.when === "turn") setImmediate(becomeReady);
    else timer = options.clock.setTimeout(becomeReady, options.lingerMs);
  }

  function becomeReady(): void {
    timer = undefined;
    if (!forming.length) return;
    ready = true;
    if (!flushing) flushForming();
  }

  function flushForming(): void {
    const batch = forming;
    forming = [];
    ready = false;
    if (options.when === "linger") options.clock.clearTimeout(timer);
    timer = undefined;
    flushing = flushBatch(batch).finally(() => {
      flushing = undefined;
      // Items that came during the flush: their batch leaves now if it became ready meanwhile,
      // otherwise when its own trigger fires.
      if (ready && forming.length) flushForming();
    });
  }

  async function flushBatch(batch: Waiting<Item, Result>[]): Promise<void> {
    let outcomes: ItemOutcome<Result>[];
    try {
      outcomes = await options.flush(batch.map((w) => w.item));
      if (outcomes.length !== batch.length) throw new Error(`a flush answered ${outcomes.length} outcomes for ${batch.length} items`);
    } catch (err) {
      for (const w of batch) w.reject(err);
      return;
    }
    for (const [i, w] of batch.entries()) {
      const outcome = outcomes[i]!;
      if (outcome.ok) w.resolve(outcome.value);
      else w.reject(outcome.error);
    }
  }

  function flushNow(): void {
    if (!forming.length) return;
    ready = true;
    if (!flushing) flushForming();
  }

  return {
    add(item) {
      return new Promise<Result>((resolve, reject) => {
        forming.push({ item, resolve, reject });
        if (forming.length === 1) armTrigger();
        if (options.when === "linger" && forming.length >= options.maxItems) {
          ready = true;
          if (!flushing) flushForming();
        }
      });
    },
    get waiting() {
      return forming.length;
    },
    flushNow,
    async drain() {
      while (flushing || forming.length) {
        flushNow();
        await flushing;
      }
    },
  };
}
