/**
 * Synchronous jobs run one per turn of the event loop, in the order they were asked for. The copies
 * of a message are composed side by side (the dispatcher claims a batch), and each composition is
 * milliseconds of string work on a large body; started together they would all run in one go once
 * their message's shared parts arrived, and stall the loop for their sum. Here each runs in an
 * immediate of its own, and the next is scheduled only when it is done, so timers, sockets and other
 * requests get their turn between any two.
 */
export type OnePerTurn = <T>(job: () => T) => Promise<T>;

export function onePerTurn(): OnePerTurn {
  let last: Promise<unknown> = Promise.resolve();
  return <T>(job: () => T): Promise<T> => {
    // An immediate scheduled from inside another runs at the next turn, never in the same check phase.
    const run = last.then(
      () =>
        new Promise<T>((resolve, reject) =>
          setImmediate(() => {
            try {
              resolve(job());
            } catch (err) {
              reject(err);
            }
          }),
        ),
    );
    last = run.catch(() => undefined);
    return run;
  };
}
