/**
 * The engine's record phase: attempt outcomes written in batches (server/background/batcher.ts), so a
 * busy dispatcher pays one transaction (one COMMIT, one fsync on SQLite) per batch, not per attempt.
 *
 * - A batch lingers up to LINGER_MS after its first write, and leaves at once when it holds two
 *   rounds of attempts or when no attempt is running (nothing more can join it: `flushNow`).
 * - An attempt's slot is freed as soon as its write is queued (the lease still covers the delivery
 *   until the write lands); only when writes pile up beyond BACKLOG_ROUNDS rounds of attempts does
 *   an attempt wait for its batch, so the database sets the pace.
 * - A batch that fails to commit is logged; its deliveries stay leased and are attempted again once
 *   the leases run out (at least once).
 */
import type { Logger } from "pino";
import { allDone, createBatcher } from "../../background/batcher.ts";
import type { Clock } from "../../clock.ts";
import type { AttemptWrite, DeliveryStore } from "../storage/deliveries.ts";

/** How long a batch of writes waits for more after its first. */
const LINGER_MS = 10;
/** A batch leaves once it holds this many rounds of attempts. */
const BATCH_ROUNDS = 2;
/** Writes waiting beyond this many rounds of attempts hold their attempts back until committed. */
const BACKLOG_ROUNDS = 4;

export function createAttemptRecorder(options: {
  queries: Pick<DeliveryStore, "recordAttempts">;
  clock: Clock;
  concurrency: number;
  log: Logger;
}) {
  const { queries, clock, concurrency, log } = options;
  const batcher = createBatcher<AttemptWrite, void>({
    when: "linger",
    lingerMs: LINGER_MS,
    maxItems: BATCH_ROUNDS * concurrency,
    clock,
    async flush(writes) {
      try {
        await queries.recordAttempts(writes, clock.now().toISOString());
      } catch (err) {
        log.error({ err }, "recording webhook attempts failed");
      }
      return allDone(writes);
    },
  });
  return {
    /** Queues an attempt's outcome; resolves at once, or once committed when the backlog is long. */
    async record(write: AttemptWrite): Promise<void> {
      const committed = batcher.add(write);
      if (batcher.waiting > BACKLOG_ROUNDS * concurrency) await committed;
    },
    /** No attempt is running: what waits leaves now. */
    flushNow: batcher.flushNow,
    /** Commits what waits and resolves when every write is committed (or has failed). */
    drain: batcher.drain,
  };
}

export type AttemptRecorder = ReturnType<typeof createAttemptRecorder>;
