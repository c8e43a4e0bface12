/**
 * The seeding's SQL, spelled for either engine (`pg`: PostgreSQL, else SQLite): the numbers a
 * recursive CTE counts out, and times as the services store them (ISO 8601 text, milliseconds, `Z`).
 */

/** `WITH RECURSIVE` numbers 1..n (both databases), to INSERT … SELECT from. */
export const seq = (n: number) => `WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < ${n})`;

/** The ISO 8601 text of the time `msExpr` (a SQL expression, ms since the epoch). */
export const isoSql = (pg: boolean, msExpr: string) =>
  pg
    ? `to_char(to_timestamp((${msExpr})::double precision / 1000) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`
    : `strftime('%Y-%m-%dT%H:%M:%fZ', (${msExpr}) / 1000.0, 'unixepoch')`;

/** A boolean literal. */
export const boolSql = (pg: boolean, value: boolean) => (pg ? String(value) : value ? "1" : "0");
