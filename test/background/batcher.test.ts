/**
 * server/background/batcher.ts, and the ManualClock timers it lingers on (server/clock.ts): when a
 * batch leaves (the turn; the linger, the size, flushNow), one flush at a time, and each caller's
 * own outcome kept apart from the batch's failure.
 */
import { describe, expect, it } from "vitest";
import { allDone, createBatcher, itemDone, itemFailed, type ItemOutcome } from "../../server/background/batcher.ts";
import { ManualClock } from "../../server/clock.ts";

const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

/** A frozen clock: only `advance` runs its timers. */
function frozenClock(): ManualClock {
  const clock = new ManualClock();
  clock.freeze();
  return clock;
}

/** A flush that records its batches and can be held open until released. */
function recordingFlush<T>() {
  const batches: T[][] = [];
  let hold: Promise<void> | undefined;
  let release = () => {};
  return {
    batches,
    holdNext() {
      hold = new Promise<void>((r) => (release = r));
    },
    release: () => release(),
    async flush(items: T[]): Promise<ItemOutcome<T>[]> {
      batches.push(items);
      const held = hold;
      hold = undefined;
      await held;
      return items.map((i) => itemDone(i));
    },
  };
}

describe("ManualClock timers", () => {
  it("frozen: a timer runs only when advance reaches it, in the order they fall due; a cleared one never", () => {
    const clock = frozenClock();
    const ran: string[] = [];
    clock.setTimeout(() => ran.push("b"), 20);
    clock.setTimeout(() => ran.push("a"), 10);
    const cleared = clock.setTimeout(() => ran.push("never"), 15);
    clock.clearTimeout(cleared);
    clock.advance(9);
    expect(ran).toEqual([]);
    expect(clock.pendingTimers).toBe(2);
    clock.advance(11);
    expect(ran).toEqual(["a", "b"]);
    expect(clock.pendingTimers).toBe(0);
  });

  it("not frozen: real time runs a timer when the clock reaches it; advance runs it sooner", async () => {
    const clock = new ManualClock();
    const byRealTime = new Promise<number>((resolve) => clock.setTimeout(() => resolve(clock.now().getTime()), 30));
    const start = clock.now().getTime();
    expect(await byRealTime).toBeGreaterThanOrEqual(start + 30);
    let ran = false;
    clock.setTimeout(() => (ran = true), 60_000);
    clock.advance(60_000);
    expect(ran).toBe(true);
  });
});

describe("batcher, on the turn", () => {
  it("items added in one turn leave as one batch; a later turn's form the next", async () => {
    const f = recordingFlush<number>();
    const b = createBatcher<number, number>({ when: "turn", flush: f.flush });
    const first = [b.add(1), b.add(2), b.add(3)];
    expect(f.batches).toEqual([]);
    expect(await Promise.all(first)).toEqual([1, 2, 3]);
    await b.add(4);
    expect(f.batches).toEqual([[1, 2, 3], [4]]);
  });

  it("one flush at a time: a batch ready while one is being flushed leaves when it ends, in order", async () => {
    const f = recordingFlush<number>();
    const b = createBatcher<number, number>({ when: "turn", flush: f.flush });
    f.holdNext();
    const one = b.add(1);
    await nextTurn();
    expect(f.batches).toEqual([[1]]);
    const two = b.add(2);
    const three = b.add(3);
    await nextTurn();
    await nextTurn();
    // Ready, but the first flush is still open.
    expect(f.batches).toEqual([[1]]);
    expect(b.waiting).toBe(2);
    f.release();
    expect(await Promise.all([one, two, three])).toEqual([1, 2, 3]);
    expect(f.batches).toEqual([[1], [2, 3]]);
  });

  it("a caller whose item failed gets its own error; the others their values", async () => {
    const b = createBatcher<number, number>({
      when: "turn",
      flush: async (items) => items.map((i) => (i % 2 ? itemFailed(new Error(`odd ${i}`)) : itemDone(i * 10))),
    });
    const results = await Promise.allSettled([b.add(1), b.add(2), b.add(3)]);
    expect(results).toEqual([
      { status: "rejected", reason: new Error("odd 1") },
      { status: "fulfilled", value: 20 },
      { status: "rejected", reason: new Error("odd 3") },
    ]);
  });

  it("a flush that throws fails every caller of its batch with its error, and the next batch goes on", async () => {
    let calls = 0;
    const b = createBatcher<number, void>({
      when: "turn",
      flush: async (items) => {
        if (calls++ === 0) throw new Error("COMMIT failed");
        return allDone(items);
      },
    });
    const results = await Promise.allSettled([b.add(1), b.add(2)]);
    expect(results.map((r) => (r.status === "rejected" ? (r.reason as Error).message : "ok"))).toEqual(["COMMIT failed", "COMMIT failed"]);
    await expect(b.add(3)).resolves.toBeUndefined();
  });

  it("a flush that answers for the wrong number of items fails its batch", async () => {
    const b = createBatcher<number, void>({ when: "turn", flush: async () => [] });
    await expect(b.add(1)).rejects.toThrow(/0 outcomes for 1 items/);
  });
});

describe("batcher, linger and size", () => {
  it("a batch waits lingerMs on the injected clock after its first item, however many turns pass", async () => {
    const clock = frozenClock();
    const f = recordingFlush<string>();
    const b = createBatcher<string, string>({ when: "linger", lingerMs: 10, maxItems: 5, clock, flush: f.flush });
    const a = b.add("a");
    clock.advance(6);
    const c = b.add("c");
    for (let i = 0; i < 20; i++) await nextTurn();
    expect(f.batches).toEqual([]);
    clock.advance(3);
    expect(f.batches).toEqual([]);
    clock.advance(1);
    expect(await Promise.all([a, c])).toEqual(["a", "c"]);
    expect(f.batches).toEqual([["a", "c"]]);
  });

  it("a batch that reaches maxItems leaves at once", async () => {
    const clock = frozenClock();
    const f = recordingFlush<number>();
    const b = createBatcher<number, number>({ when: "linger", lingerMs: 1000, maxItems: 3, clock, flush: f.flush });
    const all = [1, 2, 3].map((i) => b.add(i));
    expect(f.batches).toEqual([[1, 2, 3]]);
    await Promise.all(all);
    // Its linger timer was cleared with it.
    expect(clock.pendingTimers).toBe(0);
  });

  it("flushNow sends the forming batch at once; drain flushes what waits and resolves when all is done", async () => {
    const clock = frozenClock();
    const f = recordingFlush<number>();
    const b = createBatcher<number, number>({ when: "linger", lingerMs: 1000, maxItems: 100, clock, flush: f.flush });
    const one = b.add(1);
    b.flushNow();
    await one;
    await b.drain();
    expect(f.batches).toEqual([[1]]);
    f.holdNext();
    void b.add(2);
    b.flushNow();
    expect(f.batches).toEqual([[1], [2]]);
    void b.add(3);
    let drained = false;
    const draining = b.drain().then(() => (drained = true));
    await nextTurn();
    expect(drained).toBe(false);
    f.release();
    await draining;
    expect(f.batches).toEqual([[1], [2], [3]]);
    expect(b.waiting).toBe(0);
  });
});
