/**
 * Storage at scale (issue 16): the identity service's growth-sensitive queries with its tables at
 * 10³ and at 10⁶ rows, each figure against its 10³ one. Seeds straight through SQL in bulk (a
 * recursive CTE per table), then alternates small and large measurements. Not part of the test run.
 *
 *   npm run bench:storage                          # SQLite, 10³ vs 10⁶
 *   BENCH_LARGE=100000 BENCH_ROUNDS=2 npm run bench:storage
 *   BENCH_DATABASE_URL=postgres://… npm run bench:storage   # PostgreSQL (a database of its own per scale)
 *
 * Measured, each as the median of many warm runs, through the service's own query functions, the
 * small and the large database taking turns run by run (so both see the same load on a shared
 * machine, whose fsync latency swings by 100x):
 * - the delivery history of one webhook holding every attempt: first page (page + exact total),
 *   deepest page by cursor (the last one), and `page` at its bound (the 10000th row);
 * - an admin-authenticated request's lookup (the admin's organizations), among N admins;
 * - deleting a user (the cascade into N codes, N admin rows, sessions, grants…), in one
 *   transaction: the DELETE and the COMMIT are also reported apart;
 * - the retention purge of the expired codes, batch by batch (IDENTITY_RETENTION_BATCH_ROWS rows
 *   each), with the event loop's longest delay while it runs; against a control on the same
 *   database, one-row writes (a request's COMMIT) at the purge's pace, before and after it.
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { monitorEventLoopDelay, performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import knexFactory, { type Knex } from "knex";
import { openDatabase, isPostgres, type Database } from "../server/storage/db.ts";
import { batchSelect, createPurger, PURGE_PAUSE_MS } from "../server/storage/retention.ts";
import { createAttemptHistory, historyQuery } from "../server/webhooks/history.ts";
import { createCoreQueries } from "../handlers/identity/storage/core-queries.ts";
import { migrations } from "../handlers/identity/storage/migrations/index.ts";
import { identityRetentionRules } from "../handlers/identity/storage/retention-rules.ts";
import { loadConfig } from "../server/config.ts";

const SMALL = Number(process.env.BENCH_SMALL ?? 1_000);
const LARGE = Number(process.env.BENCH_LARGE ?? 1_000_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const READS = Number(process.env.BENCH_READS ?? 300);
const DELETES = Number(process.env.BENCH_DELETES ?? 200);
const PG = process.env.BENCH_DATABASE_URL;

const ORG = "00000000-0000-4000-8000-00000000000a";
const APP = "00000000-0000-4000-8000-00000000000b";
const WEBHOOK = "00000000-0000-4000-8000-00000000000c";
const T0 = Date.parse("2026-01-01T00:00:00.000Z");
/** The i-th user's id (1-based): distinct, and random-looking in its leading digits like a UUIDv4 index. */
const userId = (i: number) =>
  `${((i * 2654435761) % 4294967296).toString(16).padStart(8, "0")}-0000-4000-8000-${i.toString(16).padStart(12, "0")}`;

interface Scale {
  n: number;
  db: Database;
  close(): Promise<void>;
  deleted: number;
}

async function open(n: number): Promise<Scale> {
  const dir = mkdtempSync(join(tmpdir(), `bench-storage-${n}-`));
  let url: string | undefined;
  let drop = async () => {};
  if (PG) {
    const name = `bench_storage_${n}_${randomBytes(3).toString("hex")}`;
    const server = knexFactory({ client: "pg", connection: PG, pool: { min: 0, max: 1 } });
    await server.raw(`CREATE DATABASE ${name}`);
    const u = new URL(PG);
    u.pathname = `/${name}`;
    url = u.toString();
    drop = async () => {
      await server.raw(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await server.destroy();
    };
  }
  const db = await openDatabase({ service: "identity", databaseUrl: url, dataDir: dir, migrations });
  return {
    n,
    db,
    deleted: 0,
    async close() {
      await db.destroy();
      await drop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** `WITH RECURSIVE` numbers 1..n (both databases), to INSERT … SELECT from. */
const seq = (n: number) => `WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < ${n})`;
/** SQL for userId(i) on either database. */
const userIdSql = (pg: boolean, i = "i") =>
  pg
    ? `lpad(to_hex(((${i}::bigint * 2654435761) % 4294967296)), 8, '0') || '-0000-4000-8000-' || lpad(to_hex(${i}), 12, '0')`
    : `printf('%08x-0000-4000-8000-%012x', (${i} * 2654435761) % 4294967296, ${i})`;
const isoSql = (pg: boolean, msExpr: string) =>
  pg
    ? `to_char(to_timestamp((${msExpr})::double precision / 1000) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`
    : `strftime('%Y-%m-%dT%H:%M:%fZ', (${msExpr}) / 1000.0, 'unixepoch')`;

async function seed(s: Scale): Promise<void> {
  const { db, n } = s;
  const pg = isPostgres(db);
  const at = "2026-01-01T00:00:00.000Z";
  const started = performance.now();
  await db("organizations").insert({ id: ORG, name: "Org", created_at: at });
  await db("applications").insert({
    id: APP,
    organization_id: ORG,
    name: "App",
    client_id: "bench-app",
    client_type: "confidential",
    redirect_uris: "[]",
    allowed_scopes: "[]",
    enabled_providers: "[]",
    branding: "{}",
    created_at: at,
    updated_at: at,
  });
  await db.raw(`${seq(n)} INSERT INTO users (id, email, first_name, last_name, email_verified, created_at, updated_at)
    SELECT ${userIdSql(pg)}, 'user' || i || '@example.com', 'F', 'L', ${pg ? "false" : "0"}, '${at}', '${at}' FROM s`);
  // Every user an admin (of its own row's organization: one organization, N admins).
  await db.raw(
    `${seq(n)} INSERT INTO organization_admins (organization_id, user_id, created_at) SELECT '${ORG}', ${userIdSql(pg)}, '${at}' FROM s`,
  );
  // N codes over the N users, one in ten expired long ago (the purge's work), the rest live.
  await db.raw(`${seq(n)} INSERT INTO oauth_codes (code_hash, grant_id, application_id, user_id, redirect_uri, scopes, auth_time, created_at, expires_at)
    SELECT ${pg ? "md5(i::text) || md5((i + 1)::text)" : "printf('%064x', i)"}, '${ORG}', '${APP}', ${userIdSql(pg, `(((${pg ? "i::bigint" : "i"} - 1) * 7919) % ${n} + 1)`)},
           'https://a.example/cb', '[]', '${at}', '${at}', CASE WHEN i % 10 = 0 THEN '2020-01-01T00:00:00.000Z' ELSE '2099-01-01T00:00:00.000Z' END FROM s`);
  // One webhook holding all N attempts (the worst case for its history), distinct times.
  await db("webhooks").insert({
    id: WEBHOOK,
    organization_id: ORG,
    application_id: APP,
    url: "https://hooks.example/in",
    events: '["user.created"]',
    is_active: true,
    max_retries: 3,
    retry_delay_seconds: 60,
    secret: "x",
    created_at: at,
    updated_at: at,
  });
  await db.raw(`${seq(n)} INSERT INTO webhook_attempts (id, delivery_id, endpoint_id, event_id, event_type, attempt_number, ${pg ? '"trigger"' : "trigger"}, status_code, success, duration_ms, attempted_at)
    SELECT ${pg ? "lpad(to_hex(i), 8, '0') || '-0000-7000-8000-000000000000'" : "printf('%08x-0000-7000-8000-000000000000', i)"}, ${pg ? "md5(i::text)::uuid::text" : "printf('%08x-0000-4000-8000-%012x', i, i)"}, '${WEBHOOK}',
           ${pg ? "md5(i::text)::uuid::text" : "printf('%08x-0000-4000-8000-%012x', i, i)"}, 'user.created', 1, 'event', 204, ${pg ? "true" : "1"}, 12, ${isoSql(pg, `${T0} + i * 1000`)} FROM s`);
  if (pg) await db.raw("ANALYZE");
  else await db.raw("ANALYZE");
  console.log(`seeded ${n.toLocaleString("en")} rows per table in ${((performance.now() - started) / 1000).toFixed(1)} s`);
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const quantile = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))]!;

type Figures = Record<string, number>;
/** One measured operation on a scale: its run `i` resolves to extra named figures (ms) or nothing. */
// biome-ignore lint/suspicious/noConfusingVoidType: most operations return nothing; a few return extra figures
type Op = (s: Scale, i: number) => Promise<Figures | void>;

/** Runs `op` `runs` times on each scale, small and large taking turns; the median per figure and scale. */
async function timePaired(name: string, runs: number, small: Scale, large: Scale, op: Op): Promise<{ small: Figures; large: Figures }> {
  const samples = { small: {} as Record<string, number[]>, large: {} as Record<string, number[]> };
  for (let i = 0; i < runs; i++) {
    for (const [key, s] of [
      ["small", small],
      ["large", large],
    ] as const) {
      const t = performance.now();
      const extra = await op(s, i);
      const ms = performance.now() - t;
      for (const [k, v] of Object.entries({ [name]: ms, ...(extra ?? {}) })) (samples[key][k] ??= []).push(v);
    }
  }
  const medians = (x: Record<string, number[]>) => Object.fromEntries(Object.entries(x).map(([k, v]) => [k, median(v)]));
  return { small: medians(samples.small), large: medians(samples.large) };
}

/** The cursor of a scale's last page: the key of the row just before the 20 oldest. */
async function lastPageCursor(s: Scale) {
  const edge = (await s
    .db("webhook_attempts")
    .where({ endpoint_id: WEBHOOK })
    .orderBy([{ column: "attempted_at" }, { column: "attempt_number" }, { column: "id" }])
    .offset(20)
    .first()) as {
    attempted_at: string;
    attempt_number: number;
    id: string;
  };
  return { attemptedAt: edge.attempted_at, attemptNumber: Number(edge.attempt_number), id: edge.id };
}

async function measure(small: Scale, large: Scale): Promise<{ small: Figures; large: Figures }> {
  const cursors = new Map([
    [small, await lastPageCursor(small)],
    [large, await lastPageCursor(large)],
  ]);
  const random = (s: Scale, k: number) => userId(1 + ((k * 104729 + 17) % s.n));
  const ops: Array<[string, number, Op]> = [
    [
      "history: first page",
      READS,
      (s) =>
        Promise.all([createAttemptHistory(s.db).page(WEBHOOK, { page: 1 }, 20), createAttemptHistory(s.db).count(WEBHOOK)]).then(() => {}),
    ],
    [
      "history: deepest page (cursor)",
      READS,
      async (s) => {
        const history = createAttemptHistory(s.db);
        const [page, total] = await Promise.all([history.page(WEBHOOK, { after: cursors.get(s)! }, 20), history.count(WEBHOOK)]);
        if (page.items.length !== 20 || page.next !== null || total !== s.n)
          throw new Error(`deepest page wrong: ${page.items.length} items, total ${total}`);
      },
    ],
    // The deepest `page` allowed (rows 9981-10000), or the last page of a smaller history.
    [
      "history: `page` at its bound (page 500 of 20)",
      READS,
      (s) =>
        Promise.all([
          createAttemptHistory(s.db).page(WEBHOOK, { page: Math.min(500, Math.floor(s.n / 20)) }, 20),
          createAttemptHistory(s.db).count(WEBHOOK),
        ]).then(() => {}),
    ],
    [
      "admin request: the admin's organizations",
      READS,
      (s, i) =>
        createCoreQueries(s.db)
          .adminOrganizations(random(s, i))
          .then(() => {}),
    ],
    [
      "user deletion (cascade)",
      DELETES,
      async (s) => {
        s.deleted++;
        const trx = await s.db.transaction();
        const t0 = performance.now();
        const gone = await createCoreQueries(s.db).deleteUser(userId(s.n + 1 - s.deleted), trx);
        const t1 = performance.now();
        await trx.commit();
        if (gone !== 1) throw new Error("user not deleted");
        return { "  of which the DELETE": t1 - t0, "  of which the COMMIT": performance.now() - t1 };
      },
    ],
  ];
  const out = { small: {} as Figures, large: {} as Figures };
  for (const [name, runs, op] of ops) {
    const r = await timePaired(name, runs, small, large, op);
    Object.assign(out.small, r.small);
    Object.assign(out.large, r.large);
  }
  return out;
}

interface Spread {
  median: number;
  p99: number;
  max: number;
  n: number;
}
const spread = (xs: number[]): Spread => ({ median: median(xs), p99: quantile(xs, 0.99), max: Math.max(...xs), n: xs.length });
const fmt = (x: Spread) => `median ${x.median.toFixed(2)}, p99 ${x.p99.toFixed(2)}, max ${x.max.toFixed(2)} ms (${x.n})`;

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

/** A request's write: one row updated and committed, `count` times at the purge's least pace. */
async function controlWrites(s: Scale, count: number): Promise<number[]> {
  const ms: number[] = [];
  for (let k = 0; k < count; k++) {
    const t = performance.now();
    await s
      .db("users")
      .where({ id: userId(1 + ((k * 7919 + 3) % (s.n - s.deleted))) })
      .update({ updated_at: new Date().toISOString() });
    ms.push(performance.now() - t);
    await sleep(PURGE_PAUSE_MS);
  }
  return ms;
}

async function purge(s: Scale) {
  const ms: number[] = [];
  const config = loadConfig({});
  const codesOnly = identityRetentionRules(config).filter((r) => r.name === "codes");
  const purger = createPurger(s.db, codesOnly, {
    batchRows: config.IDENTITY_RETENTION_BATCH_ROWS,
    pauseMs: PURGE_PAUSE_MS,
    onBatch: (_rule, _rows, t) => ms.push(t),
  });
  const control = Math.min(1000, Math.ceil(s.n / 10 / config.IDENTITY_RETENTION_BATCH_ROWS));
  const before = await withLoopDelay(() => controlWrites(s, control));
  const started = performance.now();
  const run = await withLoopDelay(() => purger.purge(new Date()));
  const seconds = (performance.now() - started) / 1000;
  const after = await withLoopDelay(() => controlWrites(s, control));
  return {
    rows: run.result.codes ?? 0,
    batchRows: config.IDENTITY_RETENTION_BATCH_ROWS,
    seconds,
    batches: spread(ms),
    loopMaxMs: run.loopMaxMs,
    control: spread([...before.result, ...after.result]),
    controlLoopMaxMs: Math.max(before.loopMaxMs, after.loopMaxMs),
  };
}

/** The planner's own answer for the hot queries on the large database (real statistics, nothing forced): one line each. */
async function plans(s: Scale): Promise<string[]> {
  const { db, n } = s;
  const rules = identityRetentionRules(loadConfig({}));
  const q = (b: { toSQL(): { sql: string; bindings: readonly unknown[] } }) => b.toSQL() as { sql: string; bindings: readonly unknown[] };
  const queries: Array<[string, { sql: string; bindings: readonly unknown[] }]> = [
    ["history, first page", q(historyQuery(db, WEBHOOK, { page: 1 }, 20))],
    ["history, after a cursor", q(historyQuery(db, WEBHOOK, { after: await lastPageCursor(s) }, 20))],
    ["history total", q(db("webhook_attempt_counts").where({ endpoint_id: WEBHOOK }).first("attempts"))],
    ["an admin's organizations", q(createCoreQueries(db).adminOrganizations(userId(n >> 1)) as unknown as Knex.QueryBuilder)],
    ["user deletion, cascade into codes", { sql: "DELETE FROM oauth_codes WHERE user_id = ?", bindings: [userId(n >> 1)] }],
    // Another application than the one that holds every seeded code (for that one a scan is the right plan).
    [
      "application deletion, cascade into codes",
      { sql: "DELETE FROM oauth_codes WHERE application_id = ?", bindings: ["00000000-0000-4000-8000-0000000000ff"] },
    ],
    ...rules
      .filter((r) => r.name === "codes")
      .map(
        (r) =>
          [`retention batch: ${r.name}`, q(batchSelect(db, r, new Date(), 10))] as [string, { sql: string; bindings: readonly unknown[] }],
      ),
  ];
  const out: string[] = [];
  for (const [name, { sql, bindings }] of queries) {
    if (isPostgres(db)) {
      const rows = (await db.raw(`EXPLAIN (FORMAT JSON) ${sql}`, bindings as Knex.RawBinding[])) as {
        rows: Array<{ "QUERY PLAN": Array<{ Plan: PlanNode }> }>;
      };
      const nodes: string[] = [];
      const walk = (p: PlanNode) => {
        nodes.push(
          `${p["Node Type"]}${p["Index Name"] ? ` using ${p["Index Name"]}` : p["Relation Name"] ? ` on ${p["Relation Name"]}` : ""}`,
        );
        for (const c of p.Plans ?? []) walk(c);
      };
      walk(rows.rows[0]!["QUERY PLAN"][0]!.Plan);
      out.push(`${name}: ${nodes.join(" > ")}`);
    } else {
      const rows = (await db.raw(`EXPLAIN QUERY PLAN ${sql}`, bindings as Knex.RawBinding[])) as Array<{ detail: string }>;
      out.push(`${name}: ${rows.map((r) => r.detail).join(" | ")}`);
    }
  }
  return out;
}
interface PlanNode {
  "Node Type": string;
  "Relation Name"?: string;
  "Index Name"?: string;
  Plans?: PlanNode[];
}

async function main() {
  console.log(
    `storage scale: ${PG ? "PostgreSQL" : "SQLite"}, ${SMALL.toLocaleString("en")} vs ${LARGE.toLocaleString("en")} rows, ${ROUNDS} alternated rounds, node ${process.version}`,
  );
  const small = await open(SMALL);
  const large = await open(LARGE);
  try {
    await seed(small);
    await seed(large);
    if (!PG) {
      const file = (db: Database) => (db.client.config.connection as { filename: string }).filename;
      console.log(
        `file sizes: ${(statSync(file(small.db)).size / 1e6).toFixed(1)} MB and ${(statSync(file(large.db)).size / 1e6).toFixed(1)} MB`,
      );
    }
    const rounds: Array<{ small: Figures; large: Figures }> = [];
    for (let r = 0; r < ROUNDS; r++) {
      const { small: a, large: b } = await measure(small, large);
      rounds.push({ small: a, large: b });
      console.log(
        `round ${r + 1}: ` +
          Object.keys(a)
            .map((k) => `${k.trim()} ${a[k]!.toFixed(3)} / ${b[k]!.toFixed(3)} ms`)
            .join("; "),
      );
    }
    console.log(
      `\n| query | ${SMALL.toLocaleString("en")} rows, ms | ${LARGE.toLocaleString("en")} rows, ms | ratio (median of rounds) | ratios per round |`,
    );
    console.log("|---|---:|---:|---:|---|");
    for (const k of Object.keys(rounds[0]!.small)) {
      const ratios = rounds.map((x) => x.large[k]! / x.small[k]!);
      console.log(
        `| ${k} | ${median(rounds.map((x) => x.small[k]!)).toFixed(3)} | ${median(rounds.map((x) => x.large[k]!)).toFixed(3)} | ${median(ratios).toFixed(2)} | ${ratios.map((x) => x.toFixed(2)).join(", ")} |`,
      );
    }
    console.log(`\nquery plans at ${LARGE.toLocaleString("en")} rows:\n  ${(await plans(large)).join("\n  ")}`);
    const p = await purge(large);
    console.log(
      `\nretention at ${LARGE.toLocaleString("en")} codes: ${p.rows.toLocaleString("en")} expired deleted in ${p.batches.n} batches of ${p.batchRows} in ${p.seconds.toFixed(1)} s`,
    );
    console.log(`  a batch (DELETE + COMMIT): ${fmt(p.batches)}; event loop's longest delay meanwhile ${p.loopMaxMs.toFixed(1)} ms`);
    console.log(
      `  control, a one-row write on the same database before and after: ${fmt(p.control)}; event loop's longest delay ${p.controlLoopMaxMs.toFixed(1)} ms`,
    );
  } finally {
    await small.close();
    await large.close();
  }
}

await main();
