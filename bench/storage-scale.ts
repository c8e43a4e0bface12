/**
 * Cost at scale (issues 15 and 16): the identity and email services' growth-sensitive operations
 * with their tables at 10³ and at 10⁶ rows, each figure against its 10³ one (target: within 1.2×,
 * a PASS/NOT MET line per figure). Seeds straight through SQL in bulk (a recursive CTE per table,
 * one statement each), then alternates small and large measurements. Not part of the test run.
 *
 *   npm run bench:scale                            # SQLite, 10³ vs 10⁶ (bench:storage is the same)
 *   BENCH_LARGE=100000 BENCH_ROUNDS=2 npm run bench:scale
 *   BENCH_DATABASE_URL=postgres://… npm run bench:scale     # PostgreSQL (a database of its own per scale)
 *   BENCH_PURGE_ONLY=1 npm run bench:scale         # only the large scale's two purges (seeding the large one only)
 *   BENCH_PURGE_ONLY=messages npm run bench:scale  # only the messages' purge (seeding the email database only)
 *
 * Measured, each as the median of many warm runs, through the service's own query functions, the
 * small and the large database taking turns run by run (so both see the same load on a shared
 * machine, whose fsync latency swings by 100x):
 * - the token exchange's storage: the code and its user read, then the code consumed and the grant
 *   and its refresh token stored in one transaction (group-committed on SQLite), among N codes,
 *   grants and refresh tokens;
 * - a sign-in's storage: the user by email among N users, and the new session stored;
 * - the dispatcher's claim of 50 due deliveries among N (one in ten pending), as the engine runs it
 *   (on SQLite on its dispatch thread); the leases are given back between runs, untimed;
 * - email: `GET /v1/emails/{id}`'s reads (the message, its copies, its timeline, its attachments)
 *   among N messages, and the delivery history of one email webhook endpoint holding N deliveries
 *   (first page with each delivery's attempts, and its total);
 * - the delivery history of one webhook holding every attempt: first page (page + exact total),
 *   deepest page by cursor (the last one), and `page` at its bound (the 10000th row);
 * - an admin-authenticated request's lookup (the admin's organizations), among N admins;
 * - deleting a user (the cascade into N codes, N admin rows, sessions, grants…), in one
 *   transaction: the DELETE and the COMMIT are also reported apart;
 * - the retention purge of the expired codes, batch by batch (IDENTITY_RETENTION_BATCH_ROWS rows
 *   each), with the event loop's longest delay while it runs; against a control on the same
 *   database, one-row writes (a request's COMMIT) at the purge's pace, before and after it; and
 *   the same for the email messages past their period (a tenth of them, each batch cascading into
 *   the messages' copies and timelines).
 */
import { createHash, randomBytes, randomUUID } from "node:crypto";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { monitorEventLoopDelay, performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import knexFactory, { type Knex } from "knex";
import { openDatabase, type Database } from "../server/storage/db.ts";
import { isPostgres } from "../server/storage/dialect.ts";
import { batchSelect, createPurger, PURGE_PAUSE_MS, type PurgeRule } from "../server/storage/retention.ts";
import { historyQuery } from "../server/webhooks/storage/attempt-history.ts";
import { createAttemptHistory, createDeliveryRecords, createDeliveryStore } from "../server/webhooks/storage/index.ts";
import { createIdentityStorage } from "../handlers/identity/storage/index.ts";
import { knexOrganizations } from "../handlers/identity/storage/organizations.ts";
import { migrations } from "../handlers/identity/storage/migrations/index.ts";
import { migrations as emailMigrations } from "../handlers/email/storage/migrations/index.ts";
import { createEmailStorage } from "../handlers/email/storage/index.ts";
import { identityRetentionRules } from "../handlers/identity/storage/retention-rules.ts";
import { identityRetentionOf } from "../handlers/identity/config.ts";
import { emailRetentionOf } from "../handlers/email/config.ts";
import { emailRetentionRules } from "../handlers/email/storage/retention-rules.ts";
import { loadConfig } from "../app/load-config.ts";
import { APP, ORG, seedOrganizationAndApplication } from "./scale-fixtures.ts";
import { newOneTimeSecret, type SecretKeys, secretStorageKey } from "../server/security/tokens.ts";
import { uuidv7 } from "../server/webhooks/ids.ts";

const SMALL = Number(process.env.BENCH_SMALL ?? 1_000);
const LARGE = Number(process.env.BENCH_LARGE ?? 1_000_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const READS = Number(process.env.BENCH_READS ?? 300);
const DELETES = Number(process.env.BENCH_DELETES ?? 200);
/** Token exchanges per round: each takes a fresh code, and the small database has 900 live ones. */
const EXCHANGES = Number(process.env.BENCH_EXCHANGES ?? 200);
const PG = process.env.BENCH_DATABASE_URL;
const PURGE_ONLY = Boolean(process.env.BENCH_PURGE_ONLY);
/** BENCH_PURGE_ONLY=messages: the email service's purge alone, on its database alone. */
const MESSAGES_ONLY = process.env.BENCH_PURGE_ONLY === "messages";
/** Each figure at 10⁶ rows within this factor of its 10³ one; a purge batch's p99 within it of a one-row write's. */
const TARGET = 1.2;

const WEBHOOK = "00000000-0000-4000-8000-00000000000c";
const EMAIL_ENDPOINT = "00000000-0000-4000-8000-00000000000d";
const API_KEY = "00000000-0000-4000-8000-00000000000e";
const T0 = Date.parse("2026-01-01T00:00:00.000Z");
/** The i-th user's id (1-based): distinct, and random-looking in its leading digits like a UUIDv4 index. */
const userId = (i: number) =>
  `${((i * 2654435761) % 4294967296).toString(16).padStart(8, "0")}-0000-4000-8000-${i.toString(16).padStart(12, "0")}`;

interface Scale {
  n: number;
  db: Database;
  /** The email service's database at the same scale. */
  email: Database;
  close(): Promise<void>;
  deleted: number;
  /** Codes exchanged so far (each run takes a fresh one). */
  exchanged: number;
}

async function open(n: number): Promise<Scale> {
  const identity = await openService(n, "identity", migrations);
  const email = await openService(n, "email", emailMigrations);
  return {
    n,
    db: identity.db,
    email: email.db,
    deleted: 0,
    exchanged: 0,
    async close() {
      await identity.close();
      await email.close();
    },
  };
}

async function openService(n: number, service: string, serviceMigrations: typeof migrations) {
  const dir = mkdtempSync(join(tmpdir(), `bench-storage-${n}-`));
  let url: string | undefined;
  let drop = async () => {};
  if (PG) {
    const name = `bench_${service}_${n}_${randomBytes(3).toString("hex")}`;
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
  const db = await openDatabase({ service, databaseUrl: url, dataDir: dir, migrations: serviceMigrations });
  return {
    db,
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
  if (MESSAGES_ONLY) {
    await seedEmail(s.email, n);
    console.log(`seeded ${n.toLocaleString("en")} rows per email table in ${((performance.now() - started) / 1000).toFixed(1)} s`);
    return;
  }
  await seedOrganizationAndApplication(db, at);
  await db.raw(`${seq(n)} INSERT INTO users (id, email, first_name, last_name, email_verified, created_at, updated_at)
    SELECT ${userIdSql(pg)}, 'user' || i || '@example.com', 'F', 'L', ${pg ? "false" : "0"}, '${at}', '${at}' FROM s`);
  // Every user an admin (of its own row's organization: one organization, N admins).
  await db.raw(
    `${seq(n)} INSERT INTO organization_admins (organization_id, user_id, created_at) SELECT '${ORG}', ${userIdSql(pg)}, '${at}' FROM s`,
  );
  // N codes over the N users, one in ten expired long ago (the purge's work), the rest live. Keyed
  // as the service keys them under IDENTITY_TOKEN_KEYS (secretStorageKey).
  await db.raw(`${seq(n)} INSERT INTO oauth_codes (code_hash, grant_id, application_id, user_id, redirect_uri, scopes, auth_time, created_at, expires_at)
    SELECT ${secretKeySql(pg, 0)}, '${ORG}', '${APP}', ${userIdSql(pg, `(((${pg ? "i::bigint" : "i"} - 1) * 7919) % ${n} + 1)`)},
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
  // N grants, each with one live refresh token (the token exchange's and rotation's tables).
  const hex = (tag: string, i = "i") =>
    pg
      ? `lpad(to_hex(${i}), 8, '0') || '-0000-4000-${tag}-' || lpad(to_hex(${i}), 12, '0')`
      : `printf('%08x-0000-4000-${tag}-%012x', ${i}, ${i})`;
  await db.raw(`${seq(n)} INSERT INTO oauth_grants (id, application_id, user_id, scopes, auth_time, created_at, revoked_at, ends_at)
    SELECT ${hex("9000")}, '${APP}', ${userIdSql(pg)}, '[]', '${at}', '${at}', NULL, '2099-01-01T00:00:00.000Z' FROM s`);
  await db.raw(`${seq(n)} INSERT INTO oauth_refresh_tokens (id, token_hash, grant_id, parent_id, created_at, expires_at)
    SELECT ${hex("a000")}, ${secretKeySql(pg, 1)}, ${hex("9000")}, NULL, '${at}', '2099-01-01T00:00:00.000Z' FROM s`);
  // N deliveries of the webhook, one in ten still pending and due (the dispatcher's claim).
  await db.raw(`${seq(n)} INSERT INTO webhook_deliveries (id, event_id, endpoint_id, event_type, body, status, attempts_made, next_attempt_at, next_trigger, auto_retry, send_when_inactive, created_at, updated_at)
    SELECT ${hex("b000")}, ${hex("b000")}, '${WEBHOOK}', 'user.created', '{}', CASE WHEN i % 10 = 0 THEN 'pending' ELSE 'succeeded' END,
           CASE WHEN i % 10 = 0 THEN 0 ELSE 1 END, CASE WHEN i % 10 = 0 THEN ${isoSql(pg, `${T0} + i * 1000`)} ELSE NULL END, 'event',
           ${pg ? "true, false" : "1, 0"}, ${isoSql(pg, `${T0} + i * 1000`)}, ${isoSql(pg, `${T0} + i * 1000`)} FROM s`);
  await db.raw("ANALYZE");
  await seedEmail(s.email, n);
  console.log(
    `seeded ${n.toLocaleString("en")} rows per table in ${((performance.now() - started) / 1000).toFixed(1)} s (codes and refresh tokens keyed ${TOKEN_KEYS})`,
  );
}

/** The email service's N messages (one copy and one timeline event each) and one endpoint's N deliveries. */
async function seedEmail(db: Database, n: number): Promise<void> {
  const pg = isPostgres(db);
  const hex = (tag: string) =>
    pg ? `lpad(to_hex(i), 8, '0') || '-0000-4000-${tag}-' || lpad(to_hex(i), 12, '0')` : `printf('%08x-0000-4000-${tag}-%012x', i, i)`;
  const f = pg ? "false" : "0";
  const t = isoSql(pg, `${T0} + i * 1000`);
  await db.raw(`${seq(n)} INSERT INTO emails (id, api_key_id, from_address, from_name, subject, text, html, reply_to, headers, tags, metadata, track_opens, track_clicks, test_mode, status, created_at, updated_at)
    SELECT ${hex("c000")}, '${API_KEY}', 'from@example.com', NULL, 'Subject', 'Hello', NULL, '[]', '{}', '[]', '{}', ${f}, ${f}, ${f}, 'Delivered', ${t}, ${t} FROM s`);
  await db.raw(`${seq(n)} INSERT INTO email_recipients (id, email_id, position, address, address_key, status, transport, message_id, return_token, open_token, attempts, updated_at)
    SELECT ${hex("d000")}, ${hex("c000")}, 0, 'r' || i || '@example.com', 'r' || i || '@example.com', 'Delivered', 'smtp', '<' || i || '@bench.example>', 'rt' || i, 'ot' || i, 1, ${t} FROM s`);
  await db.raw(`${seq(n)} INSERT INTO email_events (id, email_id, recipient_id, type, data, created_at)
    SELECT ${hex("e000")}, ${hex("c000")}, ${hex("d000")}, 'email.delivered', '{}', ${t} FROM s`);
  await db.raw(`${seq(n)} INSERT INTO webhook_deliveries (id, event_id, endpoint_id, event_type, body, status, attempts_made, next_attempt_at, next_trigger, auto_retry, send_when_inactive, created_at, updated_at)
    SELECT ${hex("f000")}, ${hex("f000")}, '${EMAIL_ENDPOINT}', 'email.delivered', '{}', 'succeeded', 1, NULL, 'event', ${pg ? "true" : "1"}, ${f}, ${t}, ${t} FROM s`);
  // Each delivery's one attempt: the history page reads the listed deliveries' attempts by delivery.
  await db.raw(`${seq(n)} INSERT INTO webhook_attempts (id, delivery_id, endpoint_id, event_id, event_type, attempt_number, ${pg ? '"trigger"' : "trigger"}, status_code, success, duration_ms, attempted_at)
    SELECT ${hex("f100")}, ${hex("f000")}, '${EMAIL_ENDPOINT}', ${hex("f000")}, 'email.delivered', 1, 'event', 204, ${pg ? "true" : "1"}, 12, ${t} FROM s`);
  await db.raw("ANALYZE");
}

/**
 * How the service keys codes and refresh tokens (IDENTITY_TOKEN_KEYS, server/security/tokens.ts):
 * `hashed`, a SHA-256 (random: every insert and lookup on a random index page), or `time-ordered`,
 * the issue time's 12 hex digits and 52 of a hash. Seeded rows are keyed alike: the i-th row of
 * `salt` gets a pseudo-random 64-hex value the benchmark can compute again (a hash stand-in: md5 on
 * PostgreSQL, multiplicative scrambling on SQLite, which has no hash function), behind the time
 * T0 + i ms when time-ordered.
 */
const TOKEN_KEYS: SecretKeys = loadConfig({ IDENTITY_TOKEN_KEYS: process.env.IDENTITY_TOKEN_KEYS }).IDENTITY_TOKEN_KEYS;
const SCRAMBLE = [2654435761, 2246822519, 3266489917, 668265263, 374761393, 2870177450, 1103515245, 40503];
const pseudoHashSql = (pg: boolean, salt: number) =>
  pg
    ? `md5('${salt}:' || i) || md5('${salt}:' || (i + 1))`
    : `printf('${"%08x".repeat(8)}', ${SCRAMBLE.map((m) => `((i + ${salt}) * ${m}) % 4294967296`).join(", ")})`;
const pseudoHash = (pg: boolean, salt: number, i: number) =>
  pg
    ? createHash("md5").update(`${salt}:${i}`).digest("hex") +
      createHash("md5")
        .update(`${salt}:${i + 1}`)
        .digest("hex")
    : SCRAMBLE.map((m) => (((i + salt) * m) % 4294967296).toString(16).padStart(8, "0")).join("");
const secretKeySql = (pg: boolean, salt: number) =>
  TOKEN_KEYS === "hashed"
    ? pseudoHashSql(pg, salt)
    : `${pg ? `lpad(to_hex(${T0}::bigint + i), 12, '0')` : `printf('%012x', ${T0} + i)`} || substr(${pseudoHashSql(pg, salt)}, 1, 52)`;
/** The i-th seeded code's key (as seeded above, on either database). */
const codeHash = (pg: boolean, i: number) =>
  TOKEN_KEYS === "hashed" ? pseudoHash(pg, 0, i) : (T0 + i).toString(16).padStart(12, "0") + pseudoHash(pg, 0, i).slice(0, 52);
/** The i-th seeded message's id. */
const emailId = (i: number) => `${i.toString(16).padStart(8, "0")}-0000-4000-c000-${i.toString(16).padStart(12, "0")}`;

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

/** The engine's queries per scale, made once (on SQLite each has its dispatch thread). */
const claimQueriesOf = new Map<Scale, ReturnType<typeof createDeliveryStore>>();
function claimQueries(s: Scale) {
  let q = claimQueriesOf.get(s);
  if (!q) {
    q = createDeliveryStore(s.db);
    claimQueriesOf.set(s, q);
  }
  return q;
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
      "token exchange: code read, consumed, grant and refresh token stored (COMMIT)",
      EXCHANGES,
      async (s) => {
        // The next live code (one in ten seeded codes is expired), each exchanged once.
        // (A code whose user the deletions below removed is skipped.)
        const { grants } = createIdentityStorage(s.db);
        let found: Awaited<ReturnType<typeof grants.findCodeForExchange>>;
        do {
          const i = ++s.exchanged;
          if (i > s.n) throw new Error("out of codes");
          found = i % 10 === 0 ? undefined : await grants.findCodeForExchange(codeHash(isPostgres(s.db), i));
        } while (!found?.user);
        const nowMs = Date.now();
        const now = new Date(nowMs).toISOString();
        // Keys made as the service makes them (grants/issue.ts): ids time-ordered, the token's key per IDENTITY_TOKEN_KEYS.
        const grantId = uuidv7(nowMs);
        const won = await grants.redeemCode({
          codeHash: found.code.code_hash,
          now,
          grant: {
            id: grantId,
            application_id: APP,
            user_id: found.user.id,
            scopes: "[]",
            auth_time: now,
            created_at: now,
            revoked_at: null,
            ends_at: "2099-01-01T00:00:00.000Z",
          },
          refresh: {
            id: uuidv7(nowMs),
            token_hash: secretStorageKey(newOneTimeSecret(TOKEN_KEYS, "rt_", nowMs), "rt_"),
            grant_id: grantId,
            parent_id: null,
            created_at: now,
            expires_at: "2099-01-01T00:00:00.000Z",
            used_at: null,
            child_id: null,
            rotation_answer: null,
          },
        });
        if (!won) throw new Error(`code ${found.code.code_hash} not redeemed`);
      },
    ],
    [
      "sign-in: the user by email, the session stored",
      READS,
      async (s, i) => {
        // Among the users no deletion run removes.
        const k = 1 + ((i * 104729 + 17) % (s.n - DELETES * ROUNDS));
        const user = await createIdentityStorage(s.db).users.findByEmail(`user${k}@example.com`);
        if (!user) throw new Error(`user${k} not found`);
        const now = new Date().toISOString();
        await createIdentityStorage(s.db).sessions.insert({
          id_hash: randomBytes(32).toString("hex"),
          user_id: user.id,
          auth_time: now,
          created_at: now,
          expires_at: "2099-01-01T00:00:00.000Z",
        });
      },
    ],
    [
      "dispatcher's claim: 50 due deliveries (and their release)",
      READS,
      async (s) => {
        const queries = claimQueries(s);
        const token = randomUUID();
        const now = new Date().toISOString();
        const rows = await queries.claimDue(now, new Date(Date.now() + 60_000).toISOString(), token, 50);
        if (rows.length !== Math.min(50, s.n / 10)) throw new Error(`claimed ${rows.length}`);
        // Given back, so that every run finds the same due rows (timed too: the figure is claim + release).
        await queries.releaseLeases(
          rows.map((r) => r.id),
          token,
        );
      },
    ],
    [
      "email: GET /v1/emails/{id} (message, copies, timeline, attachments)",
      READS,
      async (s, i) => {
        const q = createEmailStorage(s.email).messages;
        const id = emailId(1 + ((i * 7919 + 11) % s.n));
        const email = await q.findEmail(id);
        if (!email) throw new Error(`email ${id} not found`);
        const [copies, timeline] = await Promise.all([q.recipientsOf(id), q.timelineOf(id), q.attachmentsOf(id)]);
        if (copies.length !== 1 || timeline.length !== 1) throw new Error("email incomplete");
      },
    ],
    [
      "email: delivery history, first page + total",
      READS,
      async (s) => {
        const page = await createDeliveryRecords(s.email).list(EMAIL_ENDPOINT, { limit: 20, offset: 0 });
        if (page.items.length !== 20 || page.totalCount !== s.n) throw new Error(`history: ${page.items.length} items, ${page.totalCount}`);
      },
    ],
    [
      "admin request: the admin's organizations",
      READS,
      (s, i) =>
        createIdentityStorage(s.db)
          .organizations.administeredBy(random(s, i))
          .then(() => {}),
    ],
    [
      "user deletion (cascade)",
      DELETES,
      async (s) => {
        s.deleted++;
        const trx = await s.db.transaction();
        const t0 = performance.now();
        const gone = await createIdentityStorage(s.db).users.remove(userId(s.n + 1 - s.deleted), trx);
        const t1 = performance.now();
        await trx.commit();
        if (!gone) throw new Error("user not deleted");
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
}) {
  const ms: number[] = [];
  const purger = createPurger(o.db, o.rules, { batchRows: o.batchRows, pauseMs: PURGE_PAUSE_MS, onBatch: (_rule, _rows, t) => ms.push(t) });
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
    control: spread([...before.result, ...after.result]),
    controlLoopMaxMs: Math.max(before.loopMaxMs, after.loopMaxMs),
  };
}

/** Identity: the expired codes (one in ten), against one-row writes to users. */
function purgeCodes(s: Scale) {
  const config = loadConfig({});
  return measurePurge({
    db: s.db,
    rules: identityRetentionRules(identityRetentionOf(config).periods).filter((r) => r.name === "codes"),
    at: new Date(),
    batchRows: config.IDENTITY_RETENTION_BATCH_ROWS,
    expected: s.n / 10,
    write: (k) =>
      s
        .db("users")
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

/** The planner's own answer for the hot queries on the large database (real statistics, nothing forced): one line each. */
async function plans(s: Scale): Promise<string[]> {
  const { db, n } = s;
  const rules = identityRetentionRules(identityRetentionOf(loadConfig({})).periods);
  const q = (b: { toSQL(): { sql: string; bindings: readonly unknown[] } }) => b.toSQL() as { sql: string; bindings: readonly unknown[] };
  const queries: Array<[string, { sql: string; bindings: readonly unknown[] }]> = [
    ["history, first page", q(historyQuery(db, WEBHOOK, { page: 1 }, 20))],
    ["history, after a cursor", q(historyQuery(db, WEBHOOK, { after: await lastPageCursor(s) }, 20))],
    ["history total", q(db("webhook_attempt_counts").where({ endpoint_id: WEBHOOK }).first("attempts"))],
    ["an admin's organizations", q(knexOrganizations(db).administeredBy(userId(n >> 1)) as unknown as Knex.QueryBuilder)],
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
  if (PURGE_ONLY) {
    const large = await open(LARGE);
    try {
      await seed(large);
      await purges(large);
    } finally {
      await large.close();
    }
    return;
  }
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
    console.log(`\ntarget: each figure within ${TARGET}x of its ${SMALL.toLocaleString("en")}-row figure (median of the rounds' ratios)`);
    for (const k of Object.keys(rounds[0]!.small)) {
      const ratio = median(rounds.map((x) => x.large[k]! / x.small[k]!));
      const note = k.startsWith("history: `page`") ? " (bounded on purpose: clients page by cursor)" : "";
      console.log(`  ${ratio <= TARGET ? "PASS   " : "NOT MET"} ${ratio.toFixed(2)}x  ${k.trim()}${note}`);
    }
    console.log(`\nquery plans at ${LARGE.toLocaleString("en")} rows:\n  ${(await plans(large)).join("\n  ")}`);
    await purges(large);
  } finally {
    await small.close();
    await large.close();
  }
}

/** The two retention purges on the large scale, each against its control. */
async function purges(large: Scale) {
  const runs: Array<[string, Awaited<ReturnType<typeof purgeCodes>>]> = [];
  if (!MESSAGES_ONLY) runs.push(["expired codes", await purgeCodes(large)]);
  runs.push(["messages past their period (with their copies and timelines)", await purgeMessages(large)]);
  for (const [what, p] of runs) {
    console.log(
      `\nretention at ${LARGE.toLocaleString("en")} rows, ${what}: ${p.rows.toLocaleString("en")} deleted in ${p.batches.n} batches of ${p.batchRows} in ${p.seconds.toFixed(1)} s`,
    );
    console.log(`  a batch (DELETE + COMMIT): ${fmt(p.batches)}; event loop's longest delay meanwhile ${p.loopMaxMs.toFixed(1)} ms`);
    console.log(
      `  control, a one-row write on the same database before and after: ${fmt(p.control)}; event loop's longest delay ${p.controlLoopMaxMs.toFixed(1)} ms`,
    );
    // The purge must not stall the hot path more than a request's own write does.
    const stall = p.batches.p99 / p.control.p99;
    console.log(
      `  ${stall <= TARGET ? "PASS   " : "NOT MET"} ${stall.toFixed(2)}x  the purge of ${what}: a batch's p99 against a one-row write's p99 (target within ${TARGET}x)`,
    );
  }
}

await main();
