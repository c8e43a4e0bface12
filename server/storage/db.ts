/**
 * knex for one service: SQLite (better-sqlite3) in DATA_DIR by default, PostgreSQL when
 * DATABASE_URL is set, where each service owns a schema of its own. Migrations are TypeScript
 * modules passed in by the service, run at start.
 */
import { mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import knexFactory, { type Knex } from "knex";
import { BACKSTOP_AUTOCHECKPOINT_PAGES, startCheckpointer } from "./sqlite-checkpointer.ts";
import { applySqliteSettings, assertSynchronousFull, type PragmaConnection } from "./sqlite-settings.ts";

export type Db = Knex;

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
export async function openDatabase(options: DbOptions): Promise<Db> {
  const filename = join(resolve(options.dataDir), `${options.service}.sqlite`);
  const db = options.databaseUrl ? postgres(options.databaseUrl, options.service) : sqlite(options.dataDir, filename);
  if (isPostgres(db)) await db.raw("CREATE SCHEMA IF NOT EXISTS ??", [options.service]);
  await db.migrate.latest({
    migrationSource: {
      getMigrations: async () => Object.keys(options.migrations).sort(),
      getMigrationName: (name: string) => name,
      getMigration: async (name: string) => options.migrations[name]!,
    },
    ...(isPostgres(db) ? { schemaName: options.service } : {}),
  });
  if (!isPostgres(db)) await checkpointInBackground(db, filename);
  return db;
}

/** WAL checkpoints on a thread of their own while the database is open (sqlite-checkpointer.ts). */
async function checkpointInBackground(db: Knex, filename: string): Promise<void> {
  const checkpointer = startCheckpointer(filename);
  // knex's `destroy` ends in its client's, which closes the pool: stop the worker's connection first.
  const client = db.client as { destroy(callback?: unknown): Promise<void> };
  const destroy = client.destroy.bind(client);
  client.destroy = async (callback) => {
    await checkpointer.stop();
    return destroy(callback);
  };
  try {
    assertSynchronousFull(await checkpointer.synchronous, "the checkpointer's connection");
  } catch (err) {
    await db.destroy();
    throw err;
  }
}

function sqlite(dataDir: string, filename: string): Knex {
  mkdirSync(resolve(dataDir), { recursive: true });
  return knexFactory({
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
}

function postgres(url: string, service: string): Knex {
  return knexFactory({
    client: "pg",
    connection: url,
    searchPath: [service],
    pool: { min: 0, max: 10 },
  });
}

export function isPostgres(db: Knex): boolean {
  return db.client.config.client === "pg";
}

/** `count(*)` as a number on both drivers (pg returns a string). */
export async function countRows(query: Knex.QueryBuilder): Promise<number> {
  const row = (await query.clone().clearSelect().clearOrder().count({ n: "*" }).first()) as { n: number | string } | undefined;
  return Number(row?.n ?? 0);
}

/** Multi-row inserts in chunks that stay well under the databases' bound-parameter limits. */
export async function insertChunked(trx: Knex | Knex.Transaction, table: string, rows: object[]): Promise<void> {
  if (!rows.length) return;
  const size = Math.max(1, Math.min(100, Math.floor(2000 / Object.keys(rows[0]!).length)));
  for (let i = 0; i < rows.length; i += size) await trx(table).insert(rows.slice(i, i + size));
}
