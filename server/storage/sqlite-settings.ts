/**
 * The settings every SQLite connection of a service runs with, applied and then read back.
 *
 * `synchronous` is set explicitly because SQLite does not keep it: better-sqlite3's bundled build
 * opens a database that is already in WAL mode at NORMAL (SQLITE_DEFAULT_WAL_SYNCHRONOUS), so
 * without this line every start after the first would answer COMMITs that a power failure can
 * still lose (a consumed code, a rotated refresh token, an outbox row). FULL fsyncs the log at
 * every COMMIT; it is read back and the start fails if any connection reports anything else.
 *
 * Sizing, for a file that grows to gigabytes (docs/operations.md, "SQLite sizing and durability"):
 * - `cache_size` 64 MiB per connection (SQLite's default is 16 MiB): the upper levels of every
 *   index and the pages a write transaction dirties stay in process memory.
 * - `mmap_size` 1 GiB: reads of the rest are served from the operating system's page cache by
 *   memory mapping, without a read() and copy per page; writes still go through the WAL.
 * - `journal_size_limit` 64 MiB: after a checkpoint resets the log, a file that a burst grew
 *   is truncated back, instead of staying at its largest size forever.
 */

/** better-sqlite3's `pragma` (knex hands out its connection object as is). */
export interface PragmaConnection {
  pragma(source: string, options?: { simple: boolean }): unknown;
}

/** `PRAGMA synchronous` values: 0 OFF, 1 NORMAL, 2 FULL, 3 EXTRA. */
export const SYNCHRONOUS_FULL = 2;

export const SQLITE_SIZING = {
  cacheKiB: 64 * 1024,
  mmapBytes: 1024 * 1024 * 1024,
  journalSizeLimitBytes: 64 * 1024 * 1024,
} as const;

/** The durability and sizing settings as `PRAGMA` bodies, in order (a worker thread's connection applies them too). */
export function sqliteSettingPragmas(options: { autocheckpointPages: number }): string[] {
  return [
    "journal_mode = WAL",
    "synchronous = FULL",
    `wal_autocheckpoint = ${options.autocheckpointPages}`,
    `cache_size = -${SQLITE_SIZING.cacheKiB}`,
    `mmap_size = ${SQLITE_SIZING.mmapBytes}`,
    `journal_size_limit = ${SQLITE_SIZING.journalSizeLimitBytes}`,
    "foreign_keys = ON",
    "busy_timeout = 5000",
  ];
}

/** Applies the durability and sizing settings to one connection; throws if `synchronous` did not take. */
export function applySqliteSettings(conn: PragmaConnection, options: { autocheckpointPages: number }): void {
  for (const pragma of sqliteSettingPragmas(options)) conn.pragma(pragma);
  assertSynchronousFull(conn.pragma("synchronous", { simple: true }), "the service's connection");
}

/** Refuses to run with a connection whose COMMITs are not fsynced (see the module comment). */
export function assertSynchronousFull(value: unknown, which: string): void {
  if (Number(value) !== SYNCHRONOUS_FULL) {
    throw new Error(`SQLite: ${which} reports synchronous=${String(value)}, not FULL (${SYNCHRONOUS_FULL}); refusing to start`);
  }
}
