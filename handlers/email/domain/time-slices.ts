/**
 * Synchronous jobs run in slices of the event loop's time: the queued jobs run one after another in
 * one turn until the slice's budget is spent, and the rest wait for the next turn, after timers,
 * sockets and other requests have had theirs. The copies of a message are composed side by side (the
 * dispatcher claims a batch), and with a large tracked body each composition is milliseconds of
 * string work and signing: run as they came, they would stall the loop for their sum. Small jobs (the
 * common copy) still run many to a turn, so the dispatcher's throughput is not one copy per turn. A
 * job longer than the budget runs alone in its turn: the budget bounds what is added to a turn, so
 * jobs must be cut to a size the loop can afford (the renderer signs click tokens in batches).
 */
import { performance } from "node:perf_hooks";

export type TimeSlices = <T>(job: () => T) => Promise<T>;

/** A queue of jobs that run `budgetMs` of them per turn of the event loop. */
export function timeSlices(budgetMs: number): TimeSlices {
  const queue: Array<() => void> = [];
  let scheduled = false;

  function runSlice(): void {
    const started = performance.now();
    while (queue.length > 0) {
      queue.shift()!();
      if (performance.now() - started >= budgetMs) break;
    }
    // An immediate scheduled from inside another runs at the next turn, never in the same check phase.
    scheduled = queue.length > 0;
    if (scheduled) setImmediate(runSlice);
  }

  return <T>(job: () => T): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      queue.push(() => {
        try {
          resolve(job());
        } catch (err) {
          reject(err);
        }
      });
      if (!scheduled) {
        scheduled = true;
        setImmediate(runSlice);
      }
    });
}
