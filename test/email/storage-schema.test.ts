/**
 * The email service's schema module (handlers/email/storage/schema.ts) against its migrations, on
 * SQLite and PostgreSQL: a fresh database migrated to the latest migration has, for every declared
 * table, exactly the declared columns (so a column a migration adds cannot be forgotten in the row
 * type and the statements built from it), and no table of email's own that schema.ts leaves out.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { migrations } from "../../handlers/email/storage/migrations/index.ts";
import { EMAIL_TABLES } from "../../handlers/email/storage/schema.ts";
import type { Database } from "../../server/storage/db.ts";
import { openServiceDb, type StorageKind } from "../support/storage-fixtures.ts";

/**
 * Tables in email's database that other modules own and declare: the webhook engine's (server/webhooks/,
 * every one named `webhook…`), the signing key ring (server/keys/), the server secrets
 * (server/storage/server-secrets.ts) and knex's own.
 */
const OWNED_ELSEWHERE = (table: string) =>
  table.startsWith("webhook") || ["signing_keys", "server_secrets"].includes(table) || table.startsWith("knex_migrations");

async function tablesOf(db: Database, kind: StorageKind): Promise<string[]> {
  if (kind === "sqlite") {
    const rows = (await db.raw("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")) as Array<{
      name: string;
    }>;
    return rows.map((r) => r.name).sort();
  }
  const { rows } = (await db.raw("SELECT table_name AS name FROM information_schema.tables WHERE table_schema = current_schema()")) as {
    rows: Array<{ name: string }>;
  };
  return rows.map((r) => r.name).sort();
}

async function columnsOf(db: Database, kind: StorageKind, table: string): Promise<string[]> {
  if (kind === "sqlite") {
    const rows = (await db.raw("SELECT name FROM pragma_table_info(?)", [table])) as Array<{ name: string }>;
    return rows.map((r) => r.name).sort();
  }
  const { rows } = (await db.raw(
    "SELECT column_name AS name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ?",
    [table],
  )) as { rows: Array<{ name: string }> };
  return rows.map((r) => r.name).sort();
}

describe.each<StorageKind>(["sqlite", "postgres"])("email's schema module and its migrations on %s", (kind) => {
  let t: { db: Database; close(): Promise<void> };
  beforeAll(async () => {
    t = await openServiceDb(kind, "email", migrations);
  }, 120_000);
  afterAll(async () => t?.close());

  it("every declared table has exactly the migrated table's columns", async () => {
    for (const table of EMAIL_TABLES) {
      expect(await columnsOf(t.db, kind, table.name), table.name).toEqual([...table.columns].sort());
    }
  });

  it("every table the migrations create is declared in schema.ts, or owned by a shared module", async () => {
    const declared = new Set(EMAIL_TABLES.map((table) => table.name));
    const tables = await tablesOf(t.db, kind);
    expect(tables.filter((name) => !declared.has(name) && !OWNED_ELSEWHERE(name))).toEqual([]);
    expect(tables).toEqual(expect.arrayContaining([...declared]));
  });
});
