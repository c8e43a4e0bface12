/**
 * The identity service's (or another service's) database at its latest migration, on SQLite (a temporary file) or on
 * PostgreSQL (a database of its own in CONFORMANCE_DATABASE_URL's server, or in a throwaway
 * cluster from scripts/postgres.sh), for tests of storage alone. Plus the few parent rows that
 * foreign keys ask for.
 */
import { afterAll, beforeAll } from "vitest";
import { postgresDatabase } from "./postgres-database.ts";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { migrateDatabase, openDatabase, type Database, type Migration } from "../../server/storage/db.ts";
import { migrations } from "../../handlers/identity/storage/migrations/index.ts";

export type StorageKind = "sqlite" | "postgres";

export interface IdentityDb {
  db: Database;
  /** Applies those of `all` not applied yet: a test that opened the database at an earlier migration moves it on. */
  migrateTo(all: Record<string, Migration>): Promise<void>;
  close(): Promise<void>;
}

/** Opens a fresh database of `service` at its latest migration, of `kind`; close() removes it. */
export async function openServiceDb(kind: StorageKind, service: string, serviceMigrations: Record<string, Migration>): Promise<IdentityDb> {
  const dir = mkdtempSync(join(tmpdir(), `${service}-storage-`));
  const cleanups: Array<() => unknown> = [() => rmSync(dir, { recursive: true, force: true })];
  let databaseUrl: string | undefined;
  if (kind === "postgres") {
    databaseUrl = await postgresDatabase(dir, `${service}_storage`, (c) => cleanups.unshift(c));
  }
  const db = await openDatabase({ service, databaseUrl, dataDir: dir, migrations: serviceMigrations });
  return {
    db,
    async migrateTo(all) {
      await migrateDatabase(db, { service, databaseUrl, dataDir: dir, migrations: all });
    },
    async close() {
      await db.destroy();
      for (const c of cleanups) await c();
    },
  };
}

/** Opens a fresh identity database of `kind`; close() removes it. */
export const openIdentityDb = (kind: StorageKind): Promise<IdentityDb> => openServiceDb(kind, "identity", migrations);

/**
 * For the tests of one `describe`: a fresh identity database of `kind` with the parents of `ids`
 * (seedParents), opened before the first test and removed after the last. `db` is read in tests.
 */
export function identityDbWithParents(kind: StorageKind): { ids: { org: string; app: string; user: string }; readonly db: Database } {
  const ids = { org: randomUUID(), app: randomUUID(), user: randomUUID() };
  let t: IdentityDb | undefined;
  beforeAll(async () => {
    t = await openIdentityDb(kind);
    await seedParents(t.db, ids);
  }, 120_000);
  afterAll(async () => t?.close());
  return {
    ids,
    get db() {
      if (!t) throw new Error("the database opens before the first test");
      return t.db;
    },
  };
}

const AT = "2026-01-01T00:00:00.000Z";

/** An organization, an application and a user: the parents of codes, grants and admins. */
export async function seedParents(db: Database, ids: { org: string; app: string; user: string }): Promise<void> {
  await db("organizations").insert({ id: ids.org, name: "Org", created_at: AT });
  await db("applications").insert({
    id: ids.app,
    organization_id: ids.org,
    name: "App",
    client_id: `client-${ids.app}`,
    client_type: "confidential",
    redirect_uris: "[]",
    allowed_scopes: "[]",
    enabled_providers: "[]",
    branding: "{}",
    created_at: AT,
    updated_at: AT,
  });
  await db("users").insert({
    id: ids.user,
    email: `${ids.user}@example.com`,
    first_name: "A",
    last_name: "B",
    created_at: AT,
    updated_at: AT,
  });
}
