/**
 * A lock word shared by the event loop and a worker thread: one Int32Array slot over a
 * SharedArrayBuffer, FREE or the number of its holder, taken with compare-and-swap. The worker's side
 * may block while it waits (`takeBlocking`); the event loop's never does (`takeWithoutBlocking`).
 * Either side waits at most `patienceMs` and then goes ahead without it (false): a lock that only
 * spreads the disk's work, never one that correctness depends on.
 *
 * Erasable TypeScript with no imports, so a worker module loads it as it is.
 */

export const FREE = 0;

/** `Atomics.waitAsync` (ES2024, in Node since 16), typed here: the project's `lib` is ES2023. */
const waitAsync = (
  Atomics as unknown as {
    waitAsync(a: Int32Array, index: number, value: number, timeoutMs: number): { async: boolean; value: Promise<string> | string };
  }
).waitAsync;

/**
 * One turn of a wait: `true` when it took the lock for `holder`, `false` when `deadline` has passed,
 * or the holder it saw and how long is left to wait for that holder to give the lock back.
 */
function tryTake(word: Int32Array, holder: number, deadline: number): boolean | { seen: number; left: number } {
  const seen = Atomics.compareExchange(word, 0, FREE, holder);
  if (seen === FREE) return true;
  const left = deadline - performance.now();
  return left > 0 && { seen, left };
}

/** Takes the lock for `holder`, blocking this thread while another holds it; false if `patienceMs` ran out first. */
export function takeBlocking(word: Int32Array, holder: number, patienceMs: number): boolean {
  const deadline = performance.now() + patienceMs;
  for (;;) {
    const turn = tryTake(word, holder, deadline);
    if (typeof turn === "boolean") return turn;
    Atomics.wait(word, 0, turn.seen, turn.left);
  }
}

/** Takes the lock for `holder` without blocking the event loop; false if `patienceMs` ran out first. */
export async function takeWithoutBlocking(word: Int32Array, holder: number, patienceMs: number): Promise<boolean> {
  const deadline = performance.now() + patienceMs;
  for (;;) {
    const turn = tryTake(word, holder, deadline);
    if (typeof turn === "boolean") return turn;
    // Held (by the other side, or another holder of this one): until it is given back.
    const wait = waitAsync(word, 0, turn.seen, turn.left);
    if (wait.async) await wait.value;
  }
}

/** Gives the lock back and wakes the waiters. */
export function release(word: Int32Array): void {
  Atomics.store(word, 0, FREE);
  Atomics.notify(word, 0);
}

/** Gives the lock back only if `holder` holds it (a holder that died cannot give it back itself). */
export function releaseIfHeldBy(word: Int32Array, holder: number): void {
  if (Atomics.compareExchange(word, 0, holder, FREE) === holder) Atomics.notify(word, 0);
}
