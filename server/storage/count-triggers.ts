/**
 * Exact per-key row counts kept by triggers, so that a list's total is one primary-key read instead
 * of a count over every row of the key, which grows with the table (bench/results/2026-11-23-scale.md,
 * "email's delivery history total"). Created from a service's migration; what a trigger does is part of the writing
 * statement's transaction, so the count is exact at every commit.
 */
import type { Knex } from "knex";

export interface RowCounter {
  /** The counted table. */
  table: string;
  /** The table of counts: `key` (primary key) and `column`. */
  counts: string;
  /** The counted table's column the counts are kept by. */
  key: string;
  /** The count's column in `counts`. */
  column: string;
}

/** Creates the counts table and its triggers, and counts the rows already there. */
export async function createRowCounter(db: Knex, c: RowCounter, keyLength = 36): Promise<void> {
  await db.schema.createTable(c.counts, (t) => {
    t.string(c.key, keyLength).primary();
    t.bigInteger(c.column).notNullable();
  });
  await createCountTriggers(db, c);
  await db.raw(`INSERT INTO ${c.counts} (${c.key}, ${c.column}) SELECT ${c.key}, count(*) FROM ${c.table} GROUP BY ${c.key}`);
}

/** The insert and delete triggers that keep `counts` exact (a count reaching 0 goes). */
export async function createCountTriggers(db: Knex, c: RowCounter): Promise<void> {
  if (db.client.config.client === "pg") await countTriggersPostgres(db, c);
  else await countTriggersSqlite(db, c);
}

/** SQLite: one upsert per inserted row (a lookup by primary key in the table of counts). */
async function countTriggersSqlite(db: Knex, { table, counts, key, column }: RowCounter): Promise<void> {
  await db.raw(`CREATE TRIGGER ${table}_count_insert AFTER INSERT ON ${table} BEGIN
    INSERT INTO ${counts} (${key}, ${column}) VALUES (NEW.${key}, 1)
      ON CONFLICT (${key}) DO UPDATE SET ${column} = ${column} + 1;
  END`);
  await db.raw(`CREATE TRIGGER ${table}_count_delete AFTER DELETE ON ${table} BEGIN
    UPDATE ${counts} SET ${column} = ${column} - 1 WHERE ${key} = OLD.${key};
    DELETE FROM ${counts} WHERE ${key} = OLD.${key} AND ${column} <= 0;
  END`);
}

/**
 * PostgreSQL: statement-level triggers over the transition tables, one upsert per key per
 * statement rather than per row. Counters are locked in key order so that two transactions touching
 * the same keys lock them in the same order and cannot deadlock: the insert upserts its keys in
 * that order (an INSERT takes its rows as they come); the delete locks them first (`ORDER BY …
 * FOR UPDATE`), because its UPDATE joins the counts as the plan likes: past a few hundred keys, a
 * scan of the counts table, in the order the rows lie in it. A purge batch (a DELETE over many
 * keys) then deadlocked with a batch of inserts over two of them.
 */
async function countTriggersPostgres(db: Knex, c: RowCounter): Promise<void> {
  await countFunctionsPostgres(db, c);
  const { table } = c;
  await db.raw(`CREATE TRIGGER ${table}_count_insert AFTER INSERT ON ${table}
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION ${table}_count_insert()`);
  await db.raw(`CREATE TRIGGER ${table}_count_delete AFTER DELETE ON ${table}
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION ${table}_count_delete()`);
}

/**
 * The trigger functions (PostgreSQL), created or replaced: a migration brings the functions of a
 * counter made by an older version up to date with this.
 */
export async function countFunctionsPostgres(db: Knex, { table, counts, key, column }: RowCounter): Promise<void> {
  await db.raw(`CREATE OR REPLACE FUNCTION ${table}_count_insert() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
    BEGIN
      INSERT INTO ${counts} (${key}, ${column})
        SELECT ${key}, count(*) FROM new_rows GROUP BY ${key} ORDER BY ${key}
        ON CONFLICT (${key}) DO UPDATE SET ${column} = ${counts}.${column} + EXCLUDED.${column};
      RETURN NULL;
    END $$`);
  await db.raw(`CREATE OR REPLACE FUNCTION ${table}_count_delete() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
    BEGIN
      PERFORM 1 FROM ${counts} WHERE ${key} = ANY (ARRAY(SELECT DISTINCT ${key} FROM old_rows)) ORDER BY ${key} FOR UPDATE;
      UPDATE ${counts} c SET ${column} = c.${column} - o.n
        FROM (SELECT ${key}, count(*) AS n FROM old_rows GROUP BY ${key}) o
       WHERE c.${key} = o.${key};
      DELETE FROM ${counts} WHERE ${key} IN (SELECT DISTINCT ${key} FROM old_rows) AND ${column} <= 0;
      RETURN NULL;
    END $$`);
}
