/**
 * knex for one service: SQLite (better-sqlite3) in DATA_DIR by default, PostgreSQL when
 * DATABASE_URL is set, where each service owns a schema of its own. Migrations are TypeScript
 * modules passed in by the service, run at start (or beforehand by `npm run migrate`), one process at
 * a time.
 */
import { mkdirSync } from "node:fs";
import { createRequire } from "node:module";
import { join, resolve } from "node:path";
import knexFactory, { type Knex } from "knex";
import { isPostgres } from "./dialect.ts";
import { withPostgresMigrationLock, withSqliteMigrationLock } from "./migration-lock.ts";
import { BACKSTOP_AUTOCHECKPOINT_PAGES, registerCheckpointer, startCheckpointer } from "./sqlite-checkpointer.ts";
import { applySqliteSettings, assertSynchronousFull, type PragmaConnection } from "./sqlite-settings.ts";

import type { Database } from "./transaction.ts";

// One name for a service's knex handle, defined where the domain may see it (transaction.ts).
export type { Database };

export interface Migration {
  up(knex: Knex): Promise<void>;
  down(knex: Knex): Promise<void>;
}

export interface DbOptions {
  service: string;
  /** postgres://… or undefined for SQLite. */
  databaseUrl: string | undefined;
  dataDir: string;
  migrations: Record<string, Migration>;
}

/** Opens the service's database and brings its schema up to date. */
export async function openDatabase(options: DbOptions): Promise<Database> {
  const db = connectDatabase(options);
  try {
    await migrateDatabase(db, options);
  } catch (err) {
    await db.destroy();
    throw err;
  }
  if (!isPostgres(db)) await checkpointInBackground(db, sqliteFile(options));
  return db;
}

/** For a start that fails after its database opened (keys that KEY_ENCRYPTION_KEY does not open): close it, then fail. */
export const closeAndRethrow =
  (db: Knex) =>
  async (err: unknown): Promise<never> => {
    await db.destroy();
    throw err;
  };

/** knex for the service's database, without touching its schema (`openDatabase` migrates too). */
export function connectDatabase(options: DbOptions): Database {
  return options.databaseUrl ? postgres(options.databaseUrl, options.service) : sqlite(options.dataDir, sqliteFile(options));
}

/**
 * Creates the service's schema (PostgreSQL) and applies its pending migrations, one process at a
 * time (migration-lock.ts), so instances starting together on a new database do not race.
 * Returns the names of the migrations this call applied (none when another process got there first).
 */
export async function migrateDatabase(db: Database, options: DbOptions): Promise<string[]> {
  const migrate = async () => {
    if (isPostgres(db)) await db.raw("CREATE SCHEMA IF NOT EXISTS ??", [options.service]);
    const [, applied] = (await db.migrate.latest({
      migrationSource: {
        getMigrations: async () => Object.keys(options.migrations).sort(),
        getMigrationName: (name: string) => name,
        getMigration: async (name: string) => options.migrations[name]!,
      },
      ...(isPostgres(db) ? { schemaName: options.service } : {}),
    })) as [number, string[]];
    return applied;
  };
  return options.databaseUrl
    ? withPostgresMigrationLock(options.databaseUrl, options.service, migrate)
    : withSqliteMigrationLock(`${sqliteFile(options)}-migrate.lock`, migrate);
}

const sqliteFile = (options: DbOptions): string => join(resolve(options.dataDir), `${options.service}.sqlite`);

/** WAL checkpoints on a thread of their own while the database is open (sqlite-checkpointer.ts). */
async function checkpointInBackground(db: Knex, filename: string): Promise<void> {
  const checkpointer = startCheckpointer(filename);
  // The retention purge runs its batches outside the checkpoints (sqlite-checkpointer.ts).
  registerCheckpointer(db, checkpointer);
  stopCheckpointerOnDestroy(db, checkpointer);
  try {
    assertSynchronousFull(await checkpointer.synchronous, "the checkpointer's connection");
  } catch (err) {
    await db.destroy();
    throw err;
  }
}

/**
 * `db.destroy()` stops the checkpointer's thread and connection before the pool closes, so that
 * whoever ends the database ends the thread too. knex's `destroy` ends in its client's, which
 * closes the pool: that is the method wrapped.
 */
function stopCheckpointerOnDestroy(db: Knex, checkpointer: { stop(): Promise<void> }): void {
  const client = db.client as { destroy(callback?: unknown): Promise<void> };
  const destroy = client.destroy.bind(client);
  client.destroy = async (callback) => {
    await checkpointer.stop();
    return destroy(callback);
  };
}

function sqlite(dataDir: string, filename: string): Knex {
  mkdirSync(resolve(dataDir), { recursive: true });
  const db = knexFactory({
    client: "better-sqlite3",
    connection: { filename },
    useNullAsDefault: true,
    pool: {
      // One connection: better-sqlite3 is synchronous, so transactions are serialised, which is
      // what makes single-use rules (codes, refresh tokens, build claims) atomic on SQLite.
      min: 1,
      max: 1,
      afterCreate: (conn: PragmaConnection, done: (err: Error | null, conn: unknown) => void) => {
        try {
          applySqliteSettings(conn, { autocheckpointPages: BACKSTOP_AUTOCHECKPOINT_PAGES });
          done(null, conn);
        } catch (err) {
          done(err as Error, conn);
        }
      },
    },
  });
  beginImmediate(db);
  return db;
}

// knex's SQLite transaction, to be extended: knex ships it as CommonJS without types.
const SqliteTransaction = createRequire(import.meta.url)("knex/lib/dialects/sqlite3/execution/sqlite-transaction.js") as new (
  ...args: unknown[]
) => { query(conn: unknown, sql: string): Promise<unknown> };

/** A transaction that takes SQLite's write lock at BEGIN. */
class ImmediateTransaction extends SqliteTransaction {
  begin(conn: unknown) {
    return this.query(conn, "BEGIN IMMEDIATE;");
  }
}

/**
 * Top-level transactions begin IMMEDIATE rather than knex's DEFERRED, for processes sharing one
 * data directory. A deferred transaction that reads and then writes fails at its first write with
 * SQLITE_BUSY, without waiting, whenever another process committed since its read began (WAL
 * cannot upgrade a stale snapshot): a 500 for a concurrent sign-in. IMMEDIATE waits for the write
 * lock at BEGIN, within busy_timeout. A lone process has one connection, so nothing changes for it.
 * (Nested transactions are savepoints, made by knex's own class.)
 */
function beginImmediate(db: Knex): void {
  const client = db.client as { transaction(...args: unknown[]): unknown };
  client.transaction = function (this: unknown, ...args: unknown[]) {
    return new ImmediateTransaction(this, ...args);
  };
}

function postgres(url: string, service: string): Knex {
  return knexFactory({
    client: "pg",
    connection: url,
    searchPath: [service],
    pool: { min: 0, max: 10 },
  });
}

/** `count(*)` as a number on both drivers (pg returns a string). */
export async function countRows(query: Knex.QueryBuilder): Promise<number> {
  const row = (await query.clone().clearSelect().clearOrder().count({ n: "*" }).first()) as { n: number | string } | undefined;
  return Number(row?.n ?? 0);
}

/**
 * One page of `query` by page number (1-based), newest first by `createdColumn` with `tieColumn`
 * breaking ties so pages never overlap, and the total the query matches.
 */
export async function pageNewestFirst<T>(
  query: Knex.QueryBuilder,
  page: number,
  pageSize: number,
  tieColumn = "id",
  createdColumn = "created_at",
): Promise<{ items: T[]; totalCount: number }> {
  const items = (await query
    .clone()
    .orderBy([
      { column: createdColumn, order: "desc" },
      { column: tieColumn, order: "desc" },
    ])
    .limit(pageSize)
    .offset((page - 1) * pageSize)) as T[];
  return { items, totalCount: await countRows(query) };
}

/** Multi-row inserts in chunks that stay well under the databases' bound-parameter limits. */
export async function insertChunked(trx: Knex | Knex.Transaction, table: string, rows: object[]): Promise<void> {
  if (!rows.length) return;
  const size = Math.max(1, Math.min(100, Math.floor(2000 / Object.keys(rows[0]!).length)));
  for (let i = 0; i < rows.length; i += size) await trx(table).insert(rows.slice(i, i + size));
}
