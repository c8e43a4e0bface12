/**
 * Which database a knex handle (or one of its transactions) talks to. Only the places that choose
 * an implementation look: each service's `storage/index.ts`, migrations (DDL differs), and
 * server/storage itself. Everything below a store's interface is written for one dialect or for
 * both (knex), never branching per query (scripts/check-layers.ts, ADR 0002).
 */
import type { Knex } from "knex";

export type Dialect = "sqlite" | "postgres";

export const isSqlite = (db: Knex | Knex.Transaction): boolean => db.client.config.client === "better-sqlite3";

export const isPostgres = (db: Knex | Knex.Transaction): boolean => db.client.config.client === "pg";

/** The dialect of `db`; throws for a client the services do not use. */
export function dialectOf(db: Knex | Knex.Transaction): Dialect {
  if (isSqlite(db)) return "sqlite";
  if (isPostgres(db)) return "postgres";
  throw new Error(`unsupported knex client: ${String(db.client.config.client)}`);
}
