/**
 * A durable store for oidc-provider in the token benchmark (BENCH_THEIRS_STORE=sqlite|postgres):
 * an adapter as oidc-provider's adapter interface documents it (its docs/README.md, "adapter", and
 * example/my_adapter.js: upsert, find, findByUid, findByUserCode, consume, destroy, revokeByGrantId),
 * written here, in the shape of the SQL adapters its users publish.
 *
 * What it is: one table keyed by (model, id) holding each model's JSON payload, with `grant_id`,
 * `uid` and `user_code` columns (indexed) for the secondary look-ups, an expiry column that `find`
 * honours, and a `consumed_at` column that `consume` sets. Every call is one statement in
 * autocommit, a prepared statement, so a saved code, grant or refresh token is on disk before
 * oidc-provider goes on (and before it answers), the same guarantee our server gives:
 * - sqlite: better-sqlite3 on a file in a temp folder, with the settings our service's connections
 *   use (server/storage/sqlite-settings.ts: WAL, `synchronous=FULL`, read back, refusing to run
 *   otherwise; the same cache, mmap and journal sizes), except `wal_autocheckpoint`, left at SQLite's
 *   default of 1000 pages: ours checkpoints on a thread of its own (sqlite-checkpointer.ts), which a
 *   typical adapter does not have. better-sqlite3 is synchronous, so each COMMIT's fsync holds the
 *   event loop, as it does for any adapter on that driver.
 * - postgres: node-postgres (`pg`), a pool of 10 connections (pg's default, and the size of our
 *   service's pool), in a schema of its own (`oidc_provider_bench`, dropped and created at start;
 *   ours uses `identity`), each statement flushed before it returns (`synchronous_commit` on).
 *
 * What it is not: no group commit (several requests' writes sharing one COMMIT and one fsync) and no
 * writer thread; those are our server's engineering, not something oidc-provider or a typical
 * adapter does. No cache in front of the store, no batching, nothing made slow on purpose.
 * `consume` is an unconditional UPDATE, as the interface asks (it cannot report that the row was
 * already consumed): single use under concurrency rests on oidc-provider's read-then-consume, which
 * holds on SQLite (synchronous) but not on PostgreSQL, where the same code sent twice at once was
 * answered twice (bench/results/2026-11-27-token-durable-store.md).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { assertSynchronousFull, sqliteSettingPragmas } from "../../server/storage/sqlite-settings.ts";

export type TheirsStore = "memory" | "sqlite" | "postgres";

/** The adapter interface oidc-provider calls, one instance per model name. */
export interface OidcAdapter {
  upsert(id: string, payload: Record<string, unknown>, expiresIn?: number): Promise<void>;
  find(id: string): Promise<Record<string, unknown> | undefined>;
  findByUid(uid: string): Promise<Record<string, unknown> | undefined>;
  findByUserCode(userCode: string): Promise<Record<string, unknown> | undefined>;
  consume(id: string): Promise<void>;
  destroy(id: string): Promise<void>;
  revokeByGrantId(grantId: string): Promise<void>;
}

export interface DurableStore {
  /** For `adapter` in oidc-provider's configuration: called once per model name. */
  adapterFor(model: string): OidcAdapter;
  /** One line for the benchmark's notes. */
  describe: string;
  close(): Promise<void>;
}

/** A stored row as both drivers return it (`payload` is text on SQLite, parsed jsonb on PostgreSQL). */
interface Row {
  payload: string | Record<string, unknown>;
  consumed_at: number | string | null;
}

/** The few statements the adapter runs, per store. */
interface Statements {
  upsert(row: {
    model: string;
    id: string;
    payload: string;
    grantId: string | null;
    uid: string | null;
    userCode: string | null;
    expiresAt: number | null;
  }): Promise<void>;
  find(model: string, id: string, now: number): Promise<Row | undefined>;
  findByUid(model: string, uid: string, now: number): Promise<Row | undefined>;
  findByUserCode(model: string, userCode: string, now: number): Promise<Row | undefined>;
  consume(model: string, id: string, now: number): Promise<void>;
  destroy(model: string, id: string): Promise<void>;
  revokeByGrantId(model: string, grantId: string): Promise<void>;
}

const epoch = () => Math.floor(Date.now() / 1000);
const str = (v: unknown): string | null => (typeof v === "string" ? v : null);

/** The stored payload, with `consumed` (the epoch second it was consumed) when it was. */
function toPayload(row: Row | undefined): Record<string, unknown> | undefined {
  if (!row) return undefined;
  const payload = typeof row.payload === "string" ? (JSON.parse(row.payload) as Record<string, unknown>) : row.payload;
  return row.consumed_at === null ? payload : { ...payload, consumed: Number(row.consumed_at) };
}

class Adapter implements OidcAdapter {
  constructor(
    private readonly model: string,
    private readonly sql: Statements,
  ) {}

  async upsert(id: string, payload: Record<string, unknown>, expiresIn?: number): Promise<void> {
    await this.sql.upsert({
      model: this.model,
      id,
      payload: JSON.stringify(payload),
      grantId: str(payload.grantId),
      uid: str(payload.uid),
      userCode: str(payload.userCode),
      expiresAt: typeof expiresIn === "number" ? epoch() + expiresIn : null,
    });
  }
  async find(id: string) {
    return toPayload(await this.sql.find(this.model, id, epoch()));
  }
  async findByUid(uid: string) {
    return toPayload(await this.sql.findByUid(this.model, uid, epoch()));
  }
  async findByUserCode(userCode: string) {
    return toPayload(await this.sql.findByUserCode(this.model, userCode, epoch()));
  }
  async consume(id: string): Promise<void> {
    await this.sql.consume(this.model, id, epoch());
  }
  async destroy(id: string): Promise<void> {
    await this.sql.destroy(this.model, id);
  }
  async revokeByGrantId(grantId: string): Promise<void> {
    await this.sql.revokeByGrantId(this.model, grantId);
  }
}

const TABLE = "oidc_model";
const COLUMNS = "model, id, payload, grant_id, uid, user_code, expires_at, consumed_at";
const LIVE = "(expires_at IS NULL OR expires_at > $3)";

/** The statements, with PostgreSQL's `$n` parameters, each used once and in order (so that SQLite's are `?`). */
function statementTexts(table: string) {
  return {
    upsert:
      `INSERT INTO ${table} (${COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, NULL) ` +
      "ON CONFLICT (model, id) DO UPDATE SET payload = excluded.payload, grant_id = excluded.grant_id, uid = excluded.uid, " +
      "user_code = excluded.user_code, expires_at = excluded.expires_at, consumed_at = NULL",
    find: `SELECT payload, consumed_at FROM ${table} WHERE model = $1 AND id = $2 AND ${LIVE}`,
    findByUid: `SELECT payload, consumed_at FROM ${table} WHERE model = $1 AND uid = $2 AND ${LIVE}`,
    findByUserCode: `SELECT payload, consumed_at FROM ${table} WHERE model = $1 AND user_code = $2 AND ${LIVE}`,
    consume: `UPDATE ${table} SET consumed_at = $1 WHERE model = $2 AND id = $3`,
    destroy: `DELETE FROM ${table} WHERE model = $1 AND id = $2`,
    revokeByGrantId: `DELETE FROM ${table} WHERE model = $1 AND grant_id = $2`,
  };
}

function schemaStatements(table: string, types: { json: string; int: string }): string[] {
  return [
    `CREATE TABLE ${table} (model TEXT NOT NULL, id TEXT NOT NULL, payload ${types.json} NOT NULL, grant_id TEXT, uid TEXT, ` +
      `user_code TEXT, expires_at ${types.int}, consumed_at ${types.int}, PRIMARY KEY (model, id))`,
    `CREATE INDEX ${TABLE}_grant_id ON ${table} (grant_id)`,
    `CREATE INDEX ${TABLE}_uid ON ${table} (uid)`,
    `CREATE INDEX ${TABLE}_user_code ON ${table} (user_code)`,
  ];
}

function storeOver(sql: Statements, describe: string, close: () => Promise<void>): DurableStore {
  return { adapterFor: (model) => new Adapter(model, sql), describe, close };
}

// better-sqlite3 and pg, by createRequire: neither ships type declarations here.
const require = createRequire(import.meta.url);

interface SqliteStatement {
  run(...params: unknown[]): unknown;
  get(...params: unknown[]): unknown;
}
interface SqliteDatabase {
  pragma(source: string, options?: { simple: boolean }): unknown;
  exec(sql: string): void;
  prepare(sql: string): SqliteStatement;
  close(): void;
}

/** SQLite's default `wal_autocheckpoint` (pages): what an adapter without a checkpointing thread runs with. */
const SQLITE_DEFAULT_AUTOCHECKPOINT_PAGES = 1000;

export function openSqliteStore(): DurableStore {
  const Database = require("better-sqlite3") as new (filename: string) => SqliteDatabase;
  const dir = mkdtempSync(join(tmpdir(), "bench-oidc-provider-"));
  const filename = join(dir, "oidc-provider.sqlite");
  const db = new Database(filename);
  for (const pragma of sqliteSettingPragmas({ autocheckpointPages: SQLITE_DEFAULT_AUTOCHECKPOINT_PAGES })) db.pragma(pragma);
  const journal = db.pragma("journal_mode", { simple: true });
  if (journal !== "wal") throw new Error(`SQLite: oidc-provider's store reports journal_mode=${String(journal)}, not wal; refusing to run`);
  assertSynchronousFull(db.pragma("synchronous", { simple: true }), "oidc-provider's store");
  for (const statement of schemaStatements(TABLE, { json: "TEXT", int: "INTEGER" })) db.exec(statement);
  const texts = statementTexts(TABLE);
  const prepared = Object.fromEntries(
    Object.entries(texts).map(([name, text]) => [name, db.prepare(text.replace(/\$\d/g, "?"))]),
  ) as Record<keyof typeof texts, SqliteStatement>;
  const sql: Statements = {
    async upsert(r) {
      prepared.upsert.run(r.model, r.id, r.payload, r.grantId, r.uid, r.userCode, r.expiresAt);
    },
    find: async (model, id, now) => prepared.find.get(model, id, now) as Row | undefined,
    findByUid: async (model, uid, now) => prepared.findByUid.get(model, uid, now) as Row | undefined,
    findByUserCode: async (model, userCode, now) => prepared.findByUserCode.get(model, userCode, now) as Row | undefined,
    async consume(model, id, now) {
      prepared.consume.run(now, model, id);
    },
    async destroy(model, id) {
      prepared.destroy.run(model, id);
    },
    async revokeByGrantId(model, grantId) {
      prepared.revokeByGrantId.run(model, grantId);
    },
  };
  return storeOver(sql, "durable adapter on SQLite: better-sqlite3, WAL, synchronous=FULL, one autocommit statement per call", async () => {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });
}

interface PgPool {
  query(q: string | { name: string; text: string; values: unknown[] }): Promise<{ rows: Record<string, unknown>[] }>;
  end(): Promise<void>;
}

const PG_SCHEMA = "oidc_provider_bench";

export async function openPostgresStore(url: string): Promise<DurableStore> {
  const { Pool } = require("pg") as { Pool: new (o: { connectionString: string; max: number }) => PgPool };
  const pool = new Pool({ connectionString: url, max: 10 });
  const table = `${PG_SCHEMA}.${TABLE}`;
  await pool.query(`DROP SCHEMA IF EXISTS ${PG_SCHEMA} CASCADE`);
  await pool.query(`CREATE SCHEMA ${PG_SCHEMA}`);
  for (const statement of schemaStatements(table, { json: "JSONB", int: "BIGINT" })) await pool.query(statement);
  const setting = async (name: string) => String((await pool.query(`SHOW ${name}`)).rows[0]?.[name]);
  const [fsync, synchronousCommit] = [await setting("fsync"), await setting("synchronous_commit")];
  if (fsync !== "on" || synchronousCommit === "off" || synchronousCommit === "local") {
    await pool.end();
    throw new Error(`PostgreSQL: fsync=${fsync}, synchronous_commit=${synchronousCommit}: not durable; refusing to run`);
  }
  const texts = statementTexts(table);
  const run = async (name: keyof typeof texts, values: unknown[]) =>
    (await pool.query({ name: `oidc_bench_${name}`, text: texts[name], values })).rows as unknown as Row[];
  const sql: Statements = {
    async upsert(r) {
      await run("upsert", [r.model, r.id, r.payload, r.grantId, r.uid, r.userCode, r.expiresAt]);
    },
    find: async (model, id, now) => (await run("find", [model, id, now]))[0],
    findByUid: async (model, uid, now) => (await run("findByUid", [model, uid, now]))[0],
    findByUserCode: async (model, userCode, now) => (await run("findByUserCode", [model, userCode, now]))[0],
    async consume(model, id, now) {
      await run("consume", [now, model, id]);
    },
    async destroy(model, id) {
      await run("destroy", [model, id]);
    },
    async revokeByGrantId(model, grantId) {
      await run("revokeByGrantId", [model, grantId]);
    },
  };
  return storeOver(
    sql,
    `durable adapter on PostgreSQL: pg pool of 10, schema ${PG_SCHEMA}, fsync=${fsync}, synchronous_commit=${synchronousCommit}, one autocommit statement per call`,
    async () => {
      await pool.query(`DROP SCHEMA IF EXISTS ${PG_SCHEMA} CASCADE`).catch(() => undefined);
      await pool.end();
    },
  );
}

/** BENCH_THEIRS_STORE: memory (the default), sqlite or postgres (on BENCH_DATABASE_URL's server). */
export function theirsStore(): TheirsStore {
  const store = process.env.BENCH_THEIRS_STORE ?? "memory";
  if (store !== "memory" && store !== "sqlite" && store !== "postgres")
    throw new Error(`BENCH_THEIRS_STORE=${store}: expected memory, sqlite or postgres`);
  return store;
}
