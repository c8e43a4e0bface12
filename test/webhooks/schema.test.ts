/**
 * The webhook tables as server/webhooks/storage/schema.ts declares them are the tables both
 * services' migrations make, on SQLite and PostgreSQL: every declared table has exactly the
 * migrated columns, every `webhook_*` table a service has is declared, and each service's
 * endpoints table holds the common columns, its scope column and its own. So a column added by a
 * migration cannot be forgotten in the schema, nor in the statements of the SQLite dispatch thread
 * (storage/sqlite/dispatch.js), which take their column lists from it.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { migrations as emailMigrations } from "../../handlers/email/storage/migrations/index.ts";
import { migrations as identityMigrations } from "../../handlers/identity/storage/migrations/index.ts";
import type { Database } from "../../server/storage/db.ts";
import { isPostgres } from "../../server/storage/dialect.ts";
import {
  claimedDeliveries,
  subscriptionsTable,
  webhookAttemptCounts,
  webhookAttempts,
  webhookDeliveries,
  webhookDeliveryCountDeltas,
  webhookDeliveryCounts,
  webhookEvents,
} from "../../server/webhooks/storage/schema.ts";
import { SQL } from "../../server/webhooks/storage/sqlite/dispatch.js";
import { type IdentityDb, openServiceDb, type StorageKind } from "../support/storage-fixtures.ts";

/** A declared table, as the check reads it. */
type AnyTable = { name: string; columns: readonly string[] };

const SERVICES = {
  identity: {
    migrations: identityMigrations,
    /** Identity's endpoints table (migration 0003): the application as its scope, its organization and retry settings. */
    endpoints: { table: "webhooks", scopeAndOwn: ["application_id", "organization_id", "max_retries", "retry_delay_seconds"] },
    /** Identity lists attempts (their counter); its API has no delivery list. */
    tables: (): AnyTable[] => [webhookEvents, webhookDeliveries, webhookAttempts, webhookAttemptCounts],
  },
  email: {
    migrations: emailMigrations,
    /** Email's endpoints table (migration 0003): the mode as its scope, and a description. */
    endpoints: { table: "webhooks", scopeAndOwn: ["scope", "description"] },
    /** Email lists deliveries: their total is a counter on SQLite, a sum of deltas on PostgreSQL. */
    tables: (db: Database): AnyTable[] => [
      webhookEvents,
      webhookDeliveries,
      webhookAttempts,
      isPostgres(db) ? webhookDeliveryCountDeltas : webhookDeliveryCounts,
    ],
  },
};

async function columnsOf(db: Database, table: string): Promise<string[]> {
  const rows = isPostgres(db)
    ? (
        (await db.raw(
          "SELECT column_name AS name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ?",
          [table],
        )) as {
          rows: Array<{ name: string }>;
        }
      ).rows
    : ((await db.raw("SELECT name FROM pragma_table_info(?)", [table])) as Array<{ name: string }>);
  return rows.map((r) => r.name).sort();
}

async function webhookTablesOf(db: Database): Promise<string[]> {
  const rows = isPostgres(db)
    ? (
        (await db.raw(
          "SELECT table_name AS name FROM information_schema.tables WHERE table_schema = current_schema() AND table_name LIKE 'webhook%'",
        )) as {
          rows: Array<{ name: string }>;
        }
      ).rows
    : ((await db.raw("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'webhook%'")) as Array<{ name: string }>);
  return rows.map((r) => r.name).sort();
}

const sorted = (columns: readonly string[]) => [...columns].sort();

it("the SQLite dispatch thread's statements use the schema's column lists", () => {
  expect(SQL.claim).toContain(`RETURNING ${claimedDeliveries.list()}`);
  expect(SQL.insertAttempt).toBe(webhookAttempts.insertNamed());
  expect(claimedDeliveries.columns.filter((c) => !webhookDeliveries.columns.includes(c))).toEqual([]);
});

for (const kind of ["sqlite", "postgres"] as const satisfies StorageKind[]) {
  for (const [service, spec] of Object.entries(SERVICES)) {
    describe(`${service}'s webhook tables on ${kind}`, () => {
      let t: IdentityDb;
      beforeAll(async () => {
        t = await openServiceDb(kind, service, spec.migrations);
      }, 60_000);
      afterAll(async () => t?.close());

      it("every declared table has exactly the migrated columns, and every webhook table is declared (or is the endpoints table)", async () => {
        const tables = spec.tables(t.db);
        for (const table of tables) expect(await columnsOf(t.db, table.name), table.name).toEqual(sorted(table.columns));
        expect(await webhookTablesOf(t.db)).toEqual(sorted([...tables.map((table) => table.name), spec.endpoints.table]));
      });

      it("the endpoints table holds the common columns, the scope column and the service's own", async () => {
        const { table, scopeAndOwn } = spec.endpoints;
        expect(await columnsOf(t.db, table)).toEqual(sorted([...subscriptionsTable(table).columns, ...scopeAndOwn]));
      });
    });
  }
}
