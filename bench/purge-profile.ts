/**
 * Where a retention batch's time goes on SQLite: the identity service's expired codes
 * or the email service's messages past their period, as bench:scale seeds them (N rows, a tenth
 * expired; the codes keyed sequentially, as before its `IDENTITY_TOKEN_KEYS` seeding), purged batch by batch with each batch split into its parts, against one-row writes
 * split the same way:
 * - the SELECT that walks the expiry index for the batch's keys,
 * - the DELETE of those keys (with the messages' cascades),
 * - the COMMIT (the WAL frames written and fsynced; the frames counted from the WAL index),
 * and whether the checkpointer thread (the service's, instrumented: purge-profile-worker.js) was
 * checkpointing during the COMMIT.
 *
 *   PROFILE_RULE=codes|messages PROFILE_N=1000000 PROFILE_BATCHES=3000 node --import tsx bench/purge-profile.ts
 *
 * PROFILE_GATE=on keeps batches and checkpoints apart as the service does (sqlite-checkpointer.ts's
 * `outsideCheckpoints`; off by default, to see what that changes); PROFILE_BATCH_ROWS, PROFILE_SHAPE=one
 * (the purger's one statement instead of the SELECT and the DELETE by key) and PROFILE_CHECKPOINTER=off
 * vary the rest.
 *
 * The seeded files are kept in PROFILE_DIR (default /tmp/purge-profile) and copied for each run.
 */
import { closeSync, copyFileSync, existsSync, mkdirSync, openSync, readSync, rmSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { Worker } from "node:worker_threads";
import { connectDatabase, migrateDatabase, type Database } from "../server/storage/db.ts";
import { batchSelect, PURGE_PAUSE_MS, SLOW_BATCH_PAUSE_FACTOR, type PurgeRule } from "../server/storage/retention.ts";
import { emailRetentionRules, migrations as emailMigrations } from "../handlers/email/storage/index.ts";
import { identityRetentionRules, migrations } from "../handlers/identity/storage/index.ts";
import { loadConfig } from "../app/load-config.ts";
import { emailRetentionOf } from "../handlers/email/config.ts";
import { identityRetentionOf } from "../handlers/identity/config.ts";
import { emailId, T0, userId } from "./scale/keys.ts";
import { seedMessages } from "./scale/seed-email.ts";
import { seedCodes, seedOrganizationAndApplication, seedUsers } from "./scale/seed-identity.ts";

const N = Number(process.env.PROFILE_N ?? 1_000_000);
const RULE = process.env.PROFILE_RULE ?? "codes";
const BATCHES = Number(process.env.PROFILE_BATCHES ?? 3000);
const CONTROL = Number(process.env.PROFILE_CONTROL ?? 1000);
const BATCH_ROWS = Number(process.env.PROFILE_BATCH_ROWS ?? 10);
/** `split`: SELECT the keys, then DELETE by key; `one`: the purger's one statement. */
const SHAPE = process.env.PROFILE_SHAPE ?? "split";
const CHECKPOINTER = process.env.PROFILE_CHECKPOINTER ?? "on";
/** `on`: a batch and a checkpoint never run at once (a lock both take). */
const GATE = process.env.PROFILE_GATE === "on";
const gate = new SharedArrayBuffer(4);
const lock = new Int32Array(gate);
async function acquire() {
  for (;;) {
    const seen = Atomics.compareExchange(lock, 0, 0, 1);
    if (seen === 0) return;
    const w = (
      Atomics as unknown as { waitAsync(a: Int32Array, i: number, v: number, t: number): { async: boolean; value: Promise<string> } }
    ).waitAsync(lock, 0, seen, 100);
    if (w.async) await w.value;
  }
}
function release() {
  Atomics.store(lock, 0, 0);
  Atomics.notify(lock, 0);
}
const DIR = process.env.PROFILE_DIR ?? "/tmp/purge-profile";
const at = () => performance.timeOrigin + performance.now();

const service = RULE === "codes" ? "identity" : "email";
const serviceMigrations = RULE === "codes" ? migrations : emailMigrations;

/** The same rows as bench:scale seeds for these two purges (bench/scale/), on SQLite, the codes keyed sequentially. */
async function seed(db: Database) {
  const t = performance.now();
  if (RULE === "codes") {
    await seedOrganizationAndApplication(db);
    await seedUsers(db, N, false);
    await seedCodes(db, N, false, "printf('%064x', i)");
  } else {
    await seedMessages(db, N, false);
  }
  await db.raw("ANALYZE");
  console.log(`seeded ${N} in ${((performance.now() - t) / 1000).toFixed(1)} s`);
}

async function main() {
  const template = join(DIR, `template-${service}-${N}`);
  const run = join(DIR, `run-${service}-${N}`);
  const file = (dir: string) => join(dir, `${service}.sqlite`);
  if (!existsSync(file(template))) {
    mkdirSync(template, { recursive: true });
    const db = connectDatabase({ service, databaseUrl: undefined, dataDir: template, migrations: serviceMigrations });
    await migrateDatabase(db, { service, databaseUrl: undefined, dataDir: template, migrations: serviceMigrations });
    await seed(db);
    await db.raw("PRAGMA wal_checkpoint(TRUNCATE)");
    await db.destroy();
  }
  rmSync(run, { recursive: true, force: true });
  mkdirSync(run, { recursive: true });
  copyFileSync(file(template), file(run));
  const opts = { service, databaseUrl: undefined, dataDir: run, migrations: serviceMigrations };
  const db = connectDatabase(opts);
  await migrateDatabase(db, opts);
  const worker =
    CHECKPOINTER === "on"
      ? new Worker(new URL("./purge-profile-worker.js", import.meta.url), {
          workerData: { filename: file(run), intervalMs: 250, ...(GATE ? { gate } : {}) },
        })
      : undefined;
  if (worker) await new Promise((r) => worker.once("message", r));
  const conn = (await db.client.acquireConnection()) as {
    prepare(sql: string): { run(...a: unknown[]): { changes: number }; all(...a: unknown[]): Array<Record<string, unknown>>; pluck(): any };
    exec(sql: string): void;
    pragma(s: string, o?: { simple: boolean }): unknown;
  };
  console.log(
    `SQLite ${service}, ${N} rows, rule ${RULE}, ${BATCH_ROWS} rows a batch, shape ${SHAPE}, checkpointer ${CHECKPOINTER}, gate ${GATE}, synchronous=${conn.pragma("synchronous", { simple: true })}`,
  );
  const shm = openSync(`${file(run)}-shm`, "r");
  const hdr = Buffer.alloc(48);
  /** The WAL index's mxFrame: the last valid frame of the log. */
  const mxFrame = () => (readSync(shm, hdr, 0, 48, 0), hdr.readUInt32LE(16));

  const config = loadConfig({});
  let rule: PurgeRule;
  let purgeAt: Date;
  let control: (k: number) => void;
  if (RULE === "codes") {
    rule = identityRetentionRules(identityRetentionOf(config).periods).find((r) => r.name === "codes")!;
    purgeAt = new Date();
    const st = conn.prepare("UPDATE users SET updated_at = ? WHERE id = ?");
    control = (k) => st.run(new Date().toISOString(), userId(1 + ((k * 7919 + 3) % N)));
  } else {
    rule = emailRetentionRules(emailRetentionOf(config).periods).find((r) => r.name === "messages")!;
    const oldest = Math.floor(N / 10);
    purgeAt = new Date(T0 + oldest * 1000 + 500 + config.EMAIL_RETENTION_MESSAGES_SECONDS * 1000);
    const st = conn.prepare("UPDATE emails SET updated_at = ? WHERE id = ?");
    control = (k) => st.run(new Date().toISOString(), emailId(oldest + 1 + ((k * 7919 + 3) % (N - oldest))));
  }
  const sel = batchSelect(db, rule, purgeAt, BATCH_ROWS).toSQL();
  const selectKeys = conn.prepare(sel.sql).pluck();
  const oneStatement = db(rule.table)
    .whereIn(rule.key, batchSelect(db, rule, purgeAt, BATCH_ROWS))
    .delete()
    .toSQL();
  const deleteOne = conn.prepare(oneStatement.sql);
  const deleteBy = new Map<number, ReturnType<typeof conn.prepare>>();
  const byKeys = (n: number) => {
    let st = deleteBy.get(n);
    if (!st) deleteBy.set(n, (st = conn.prepare(`DELETE FROM ${rule.table} WHERE ${rule.key} IN (${Array(n).fill("?").join(", ")})`)));
    return st;
  };
  const begin = conn.prepare("BEGIN IMMEDIATE");
  const commit = conn.prepare("COMMIT");

  interface Sample {
    start: number;
    select: number;
    del: number;
    commitStart: number;
    commit: number;
    total: number;
    frames: number;
    rows: number;
  }
  const one = (work: () => { select: number; rows: number }): Sample => {
    const f0 = mxFrame();
    const start = at();
    begin.run();
    const t1 = at();
    const { select, rows } = work();
    const commitStart = at();
    commit.run();
    const end = at();
    const f1 = mxFrame();
    return {
      start,
      select,
      del: commitStart - t1 - select,
      commitStart,
      commit: end - commitStart,
      total: end - start,
      frames: f1 >= f0 ? f1 - f0 : f1,
      rows,
    };
  };
  const controls = async (count: number) => {
    const out: Sample[] = [];
    for (let k = 0; k < count; k++) {
      out.push(one(() => (control(k), { select: 0, rows: 1 })));
      await sleep(PURGE_PAUSE_MS);
    }
    return out;
  };
  const before = await controls(CONTROL);
  const batches: Sample[] = [];
  const t = performance.now();
  let gateWaits = 0;
  let gateWaitMs = 0;
  for (let b = 0; b < BATCHES; b++) {
    if (GATE) {
      const w0 = performance.now();
      if (Atomics.load(lock, 0) !== 0) gateWaits++;
      await acquire();
      gateWaitMs += performance.now() - w0;
    }
    const s = one(() => {
      if (SHAPE === "one") return { select: 0, rows: deleteOne.run(...oneStatement.bindings).changes };
      const t0 = at();
      const keys = selectKeys.all(...sel.bindings) as string[];
      const select = at() - t0;
      return { select, rows: keys.length ? byKeys(keys.length).run(...keys).changes : 0 };
    });
    if (GATE) release();
    batches.push(s);
    if (s.rows < BATCH_ROWS) break;
    await sleep(Math.max(PURGE_PAUSE_MS, SLOW_BATCH_PAUSE_FACTOR * s.total));
  }
  const purgeSeconds = (performance.now() - t) / 1000;
  const after = await controls(CONTROL);
  const trace: Array<[number, number, number, number, number]> = worker
    ? await new Promise((r) => {
        worker.once("message", (m: { trace: Array<[number, number, number, number, number]> }) => r(m.trace));
        worker.postMessage("trace");
      })
    : [];
  if (worker) {
    worker.postMessage("stop");
    await new Promise((r) => worker.once("exit", r));
  }
  closeSync(shm);
  db.client.releaseConnection(conn);
  await db.destroy();

  /** The checkpoint that overlapped [a, b], if any. */
  const overlap = (a: number, b: number) => trace.find(([s, e]) => s < b && e > a);
  const q = (xs: number[], p: number) => [...xs].sort((x, y) => x - y)[Math.min(xs.length - 1, Math.floor(xs.length * p))] ?? Number.NaN;
  const f = (x: number) => x.toFixed(2);
  const report = (name: string, xs: Sample[]) => {
    const col = (k: keyof Sample) => xs.map((x) => x[k]);
    console.log(`\n${name}: ${xs.length}`);
    for (const k of ["total", "select", "del", "commit", "frames"] as const) {
      const v = col(k);
      console.log(`  ${k.padEnd(7)} median ${f(q(v, 0.5))}  p90 ${f(q(v, 0.9))}  p99 ${f(q(v, 0.99))}  max ${f(Math.max(...v))}`);
    }
    const during = xs.filter((x) => overlap(x.commitStart, x.commitStart + x.commit));
    const notDuring = xs.filter((x) => !overlap(x.commitStart, x.commitStart + x.commit));
    const anyOverlap = xs.filter((x) => overlap(x.start, x.start + x.total));
    console.log(
      `  COMMIT while a checkpoint ran: ${during.length} (${((100 * during.length) / xs.length).toFixed(1)}%), commit p50/p99 ${f(
        q(
          during.map((x) => x.commit),
          0.5,
        ),
      )}/${f(
        q(
          during.map((x) => x.commit),
          0.99,
        ),
      )}; otherwise p50/p99 ${f(
        q(
          notDuring.map((x) => x.commit),
          0.5,
        ),
      )}/${f(
        q(
          notDuring.map((x) => x.commit),
          0.99,
        ),
      )}; total p99 with/without any overlap ${f(
        q(
          anyOverlap.map((x) => x.total),
          0.99,
        ),
      )}/${f(
        q(
          xs.filter((x) => !overlap(x.start, x.start + x.total)).map((x) => x.total),
          0.99,
        ),
      )}`,
    );
    const p99 = q(col("total"), 0.99);
    const slow = xs
      .filter((x) => x.total >= p99)
      .sort((a, b) => b.total - a.total)
      .slice(0, 12);
    console.log(`  slowest (>= p99 ${f(p99)}): total = select + delete + commit, frames, checkpoint overlapping (ms of it, frames copied)`);
    for (const x of slow) {
      const c = overlap(x.start, x.start + x.total);
      console.log(
        `    ${f(x.total)} = ${f(x.select)} + ${f(x.del)} + ${f(x.commit)}, ${x.frames} frames${c ? `, checkpoint ${f(c[1] - c[0])} ms (${c[4]}/${c[3]} frames)` : ""}`,
      );
    }
  };
  console.log(
    `\npurge: ${batches.reduce((a, b) => a + b.rows, 0)} rows in ${batches.length} batches, ${purgeSeconds.toFixed(1)} s; gate ${GATE ? `on, ${gateWaits} waits, ${gateWaitMs.toFixed(0)} ms` : "off"}`,
  );
  report("control, one-row writes", [...before, ...after]);
  report(`purge batches (${SHAPE})`, batches);
  if (process.env.PROFILE_TRACE)
    for (const c of trace)
      console.log(`  ckpt +${((c[0] - trace[0]![0]) / 1000).toFixed(3)} s ${f(c[1] - c[0])} ms busy ${c[2]} log ${c[3]} done ${c[4]}`);
  const ck = trace.filter((c) => c[4] > 0);
  console.log(
    `\ncheckpoints: ${trace.length} ticks, ${ck.length} copied frames; duration of those p50 ${f(
      q(
        ck.map((c) => c[1] - c[0]),
        0.5,
      ),
    )} p99 ${f(
      q(
        ck.map((c) => c[1] - c[0]),
        0.99,
      ),
    )} max ${f(Math.max(0, ...ck.map((c) => c[1] - c[0])))} ms; frames copied p50 ${q(
      ck.map((c) => c[4]),
      0.5,
    )} max ${Math.max(0, ...ck.map((c) => c[4]))}; busy ${trace.filter((c) => c[2] !== 0).length}`,
  );
}

await main();
