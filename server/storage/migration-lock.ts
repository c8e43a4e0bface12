/**
 * One migrator at a time per service and database, across processes. knex's own migration lock
 * does not serve here: its tables are created by a check-then-create that two starting instances
 * race (`relation "knex_migrations" already exists`; on SQLite both insert a lock row, after which
 * every start fails with "Migration table is already locked"), and a process that finds the lock
 * taken gives up instead of waiting. So instances queue on a lock of their own around schema
 * creation and `migrate.latest`; the last in line finds nothing left to do. Either lock belongs to a
 * connection: a process that dies holding it releases it with its connection.
 */
import knexFactory, { type Knex } from "knex";

/** How often a waiting SQLite migrator tries the lock again (PostgreSQL queues in the server). */
const SQLITE_RETRY_MS = 25;

/**
 * PostgreSQL: a session-level advisory lock, keyed by this platform and the service (its schema),
 * on a dedicated connection held for the duration of `fn`. Other services migrate in parallel.
 */
export async function withPostgresMigrationLock<T>(url: string, service: string, fn: () => Promise<T>): Promise<T> {
  const lock = knexFactory({ client: "pg", connection: url, pool: { min: 1, max: 1 } });
  const key = ["spec-first-platform migrations", service];
  try {
    await lock.raw("SELECT pg_advisory_lock(hashtext(?), hashtext(?))", key);
    try {
      return await fn();
    } finally {
      await lock.raw("SELECT pg_advisory_unlock(hashtext(?), hashtext(?))", key).catch(() => {});
    }
  } finally {
    await lock.destroy();
  }
}

/**
 * SQLite: an exclusive transaction on a small lock file beside the service's database. The lock
 * cannot live in the database itself: the service's own connection must write there while it is
 * held. Tried without the busy handler and retried off the event loop, since better-sqlite3 would
 * otherwise wait synchronously and freeze the process.
 */
export async function withSqliteMigrationLock<T>(lockFile: string, fn: () => Promise<T>): Promise<T> {
  const lock: Knex = knexFactory({
    client: "better-sqlite3",
    connection: { filename: lockFile },
    useNullAsDefault: true,
    pool: {
      min: 1,
      max: 1,
      afterCreate: (conn: { pragma(s: string): unknown }, done: (err: Error | null, conn: unknown) => void) => {
        conn.pragma("busy_timeout = 0");
        done(null, conn);
      },
    },
  });
  try {
    for (;;) {
      try {
        await lock.raw("BEGIN EXCLUSIVE");
        break;
      } catch (err) {
        if (!isBusy(err)) throw err;
        await new Promise((resolve) => setTimeout(resolve, SQLITE_RETRY_MS));
      }
    }
    try {
      return await fn();
    } finally {
      await lock.raw("ROLLBACK").catch(() => {});
    }
  } finally {
    await lock.destroy();
  }
}

function isBusy(err: unknown): boolean {
  const code = (err as { code?: unknown }).code;
  return code === "SQLITE_BUSY" || code === "SQLITE_LOCKED";
}
