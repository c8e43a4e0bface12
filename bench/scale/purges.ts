/**
 * The two retention purges at the large scale, each run as the service runs it (`createPurger` with
 * the service's rule and batch size, batch by batch with its pause), timed batch by batch with the
 * event loop's longest delay, against a control on the same database: one-row writes (a request's
 * COMMIT). The control the verdict uses takes turns with the batches, one write in each pause (after
 * the purge's own pause, and followed by the same least pause), so that a change in the machine's
 * load touches both sides alike; the writes before the purge and after it are reported beside it.
 */
import { monitorEventLoopDelay, performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { emailRetentionRules } from "../../handlers/email/storage/index.ts";
import { identityRetentionRules } from "../../handlers/identity/storage/index.ts";
import { loadConfig } from "../../app/load-config.ts";
import { emailRetentionOf } from "../../handlers/email/config.ts";
import { identityRetentionOf } from "../../handlers/identity/config.ts";
import type { Database } from "../../server/storage/db.ts";
import { createPurger, PURGE_PAUSE_MS, type PurgeRule } from "../../server/storage/retention.ts";
import type { Scale } from "./databases.ts";
import { emailId, T0, userId } from "./keys.ts";
import { MESSAGES_ONLY } from "./settings.ts";
import { type Spread, spread } from "./timing.ts";

/** What one purge did and cost, and its control's figures. */
export interface PurgeFigures {
  rows: number;
  batchRows: number;
  seconds: number;
  /** Each batch's DELETE and COMMIT. */
  batches: Spread;
  loopMaxMs: number;
  /** The one-row writes taking turns with the batches, one in each pause: the verdict's control. */
  interleaved: Spread;
  /** The one-row writes before and after the purge. */
  control: Spread;
  controlLoopMaxMs: number;
}

/** Runs `f` while the event loop's delay is sampled (1 ms resolution); its longest delay, ms. */
async function withLoopDelay<T>(f: () => Promise<T>): Promise<{ result: T; loopMaxMs: number }> {
  const h = monitorEventLoopDelay({ resolution: 1 });
  h.enable();
  try {
    const result = await f();
    return { result, loopMaxMs: h.max / 1e6 };
  } finally {
    h.disable();
  }
}

/** A request's write: one row updated and committed (by `write(k)`), `count` times at the purge's least pace. */
async function controlWrites(write: (k: number) => Promise<unknown>, count: number): Promise<number[]> {
  const ms: number[] = [];
  for (let k = 0; k < count; k++) {
    const t = performance.now();
    await write(k);
    ms.push(performance.now() - t);
    await sleep(PURGE_PAUSE_MS);
  }
  return ms;
}

/** One purge run of `rules` at `at`, timed batch by batch, between two runs of control writes on the same database. */
async function measurePurge(o: {
  db: Database;
  rules: PurgeRule[];
  at: Date;
  batchRows: number;
  expected: number;
  write: (k: number) => Promise<unknown>;
}): Promise<PurgeFigures> {
  const ms: number[] = [];
  const interleaved: number[] = [];
  let k = 0;
  // The purge's pause (as the service waits), then one control write, then the least pause again:
  // each batch and each write comes after a pause of its own.
  const wait = async (pause: number) => {
    await sleep(pause);
    const t = performance.now();
    await o.write(k++);
    interleaved.push(performance.now() - t);
    await sleep(PURGE_PAUSE_MS);
  };
  const purger = createPurger(o.db, o.rules, {
    batchRows: o.batchRows,
    pauseMs: PURGE_PAUSE_MS,
    wait,
    onBatch: (_rule, _rows, t) => ms.push(t),
  });
  const control = Math.min(1000, Math.ceil(o.expected / o.batchRows));
  const before = await withLoopDelay(() => controlWrites(o.write, control));
  const started = performance.now();
  const run = await withLoopDelay(() => purger.purge(o.at));
  const seconds = (performance.now() - started) / 1000;
  const after = await withLoopDelay(() => controlWrites(o.write, control));
  return {
    rows: Object.values(run.result).reduce((a, b) => a + b, 0),
    batchRows: o.batchRows,
    seconds,
    batches: spread(ms),
    loopMaxMs: run.loopMaxMs,
    interleaved: spread(interleaved),
    control: spread([...before.result, ...after.result]),
    controlLoopMaxMs: Math.max(before.loopMaxMs, after.loopMaxMs),
  };
}

/** Identity: the expired codes (one in ten), against one-row writes to users. */
function purgeCodes(s: Scale) {
  const config = loadConfig({});
  return measurePurge({
    db: s.identity,
    rules: identityRetentionRules(identityRetentionOf(config).periods).filter((r) => r.name === "codes"),
    at: new Date(),
    batchRows: config.IDENTITY_RETENTION_BATCH_ROWS,
    expected: s.n / 10,
    write: (k) =>
      s
        .identity("users")
        .where({ id: userId(1 + ((k * 7919 + 3) % (s.n - s.deleted))) })
        .update({ updated_at: new Date().toISOString() }),
  });
}

/**
 * Email: the oldest tenth of the messages past their retention period, each with its copy and
 * timeline (the cascade), against one-row writes to the messages that stay.
 */
function purgeMessages(s: Scale) {
  const config = loadConfig({});
  const oldest = Math.floor(s.n / 10);
  // Seeded message i was sent at T0 + i s: at this moment messages 1…oldest are past the period.
  const at = new Date(T0 + oldest * 1000 + 500 + config.EMAIL_RETENTION_MESSAGES_SECONDS * 1000);
  return measurePurge({
    db: s.email,
    rules: emailRetentionRules(emailRetentionOf(config).periods).filter((r) => r.name === "messages"),
    at,
    batchRows: config.EMAIL_RETENTION_BATCH_ROWS,
    expected: oldest,
    write: (k) =>
      s
        .email("emails")
        .where({ id: emailId(oldest + 1 + ((k * 7919 + 3) % (s.n - oldest))) })
        .update({ updated_at: new Date().toISOString() }),
  });
}

/** The purges of a scale, one after the other: the expired codes (unless BENCH_PURGE_ONLY=messages), then the messages. */
export async function runPurges(s: Scale): Promise<Array<[string, PurgeFigures]>> {
  const runs: Array<[string, PurgeFigures]> = [];
  if (!MESSAGES_ONLY) runs.push(["expired codes", await purgeCodes(s)]);
  runs.push(["messages past their period (with their copies and timelines)", await purgeMessages(s)]);
  return runs;
}
