/**
 * Each service's schema module against its migrations, on SQLite and PostgreSQL: a fresh database
 * migrated to the latest version has, for every table `storage/schema.ts` declares, exactly the
 * declared columns (PRAGMA table_info / information_schema.columns); and every migrated table is
 * declared there or owned by a shared module named below. So a migration that adds a column or a
 * table fails here until schema.ts says so, and the stores' column lists cannot drift from it.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Knex } from "knex";
import { migrations as identityMigrations } from "../../handlers/identity/storage/migrations/index.ts";
import { identityTables } from "../../handlers/identity/storage/schema.ts";
import { migrations as repositoryMigrations } from "../../handlers/repository/storage/migrations.ts";
import { repositoryTables } from "../../handlers/repository/storage/schema.ts";
import type { Migration } from "../../server/storage/db.ts";
import { isPostgres } from "../../server/storage/dialect.ts";
import type { Table } from "../../server/storage/schema.ts";
import { openServiceDb, type IdentityDb, type StorageKind } from "../support/storage-fixtures.ts";

/** Tables a shared module declares and queries (with the module), not the service's schema.ts. */
const SHARED_TABLES: Record<string, string> = {
  signing_keys: "server/keys/store.ts",
  signing_key_ring: "server/keys/store.ts",
  server_secrets: "server/storage/server-secrets.ts",
  oauth_signin_failures: "server/security/sign-in-throttle-store.ts",
  oauth_signin_known_addresses: "server/security/sign-in-throttle-store.ts",
  signin_failures: "server/security/sign-in-throttle-store.ts",
  signin_known_addresses: "server/security/sign-in-throttle-store.ts",
  webhooks: "server/webhooks/ (the service's endpoints, scoped by application_id)",
};
/** knex's bookkeeping, SQLite's own, and the webhook engine's tables (server/webhooks/storage/schema.ts, test/webhooks/schema.test.ts). */
const OUTSIDE_ANY_SCHEMA = /^(knex_migrations|sqlite_|webhook_)/;

async function migratedTables(db: Knex): Promise<Map<string, string[]>> {
  const rows = isPostgres(db)
    ? ((
        await db.raw(
          "SELECT table_name AS t, column_name AS c FROM information_schema.columns WHERE table_schema = current_schema() ORDER BY table_name, ordinal_position",
        )
      ).rows as Array<{ t: string; c: string }>)
    : ((await db.raw(
        "SELECT m.name AS t, p.name AS c FROM sqlite_master m, pragma_table_info(m.name) p WHERE m.type = 'table' ORDER BY m.name, p.cid",
      )) as Array<{ t: string; c: string }>);
  const tables = new Map<string, string[]>();
  for (const { t, c } of rows) tables.set(t, [...(tables.get(t) ?? []), c]);
  return tables;
}

const SERVICES: Array<[string, Record<string, Migration>, ReadonlyArray<Table<object>>]> = [
  ["identity", identityMigrations, identityTables as ReadonlyArray<Table<object>>],
  ["repository", repositoryMigrations, repositoryTables as ReadonlyArray<Table<object>>],
];

describe.each<StorageKind>(["sqlite", "postgres"])("storage schemas on %s", (kind) => {
  describe.each(SERVICES)("%s", (service, migrations, declared) => {
    let t: IdentityDb;
    let migrated: Map<string, string[]>;
    beforeAll(async () => {
      t = await openServiceDb(kind, service, migrations);
      migrated = await migratedTables(t.db);
    }, 120_000);
    afterAll(async () => t?.close());

    it("every table schema.ts declares has exactly its columns in the migrated database", () => {
      for (const table of declared) {
        expect({ table: table.name, columns: [...(migrated.get(table.name) ?? [])].sort() }).toEqual({
          table: table.name,
          columns: [...table.columns].sort(),
        });
      }
    });

    it("every migrated table is declared in schema.ts or by a shared module", () => {
      const names = new Set(declared.map((d) => d.name));
      const undeclared = [...migrated.keys()].filter(
        (name) => !names.has(name) && !(name in SHARED_TABLES) && !OUTSIDE_ANY_SCHEMA.test(name),
      );
      expect(undeclared).toEqual([]);
    });
  });
});
