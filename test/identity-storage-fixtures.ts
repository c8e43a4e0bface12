/**
 * The identity service's database at its latest migration, on SQLite (a temporary file) or on
 * PostgreSQL (a database of its own in CONFORMANCE_DATABASE_URL's server, or in a throwaway
 * cluster from scripts/postgres.sh), for tests of storage alone. Plus the few parent rows that
 * foreign keys ask for.
 */
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import knexFactory from "knex";
import { openDatabase, type Db } from "../server/storage/db.ts";
import { migrations } from "../handlers/identity/storage/migrations/index.ts";

export type StorageKind = "sqlite" | "postgres";

export interface IdentityDb {
  db: Db;
  close(): Promise<void>;
}

/** Opens a fresh identity database of `kind`; close() removes it. */
export async function openIdentityDb(kind: StorageKind): Promise<IdentityDb> {
  const dir = mkdtempSync(join(tmpdir(), "identity-storage-"));
  const cleanups: Array<() => unknown> = [() => rmSync(dir, { recursive: true, force: true })];
  let databaseUrl: string | undefined;
  if (kind === "postgres") {
    let adminUrl = process.env.CONFORMANCE_DATABASE_URL;
    if (!adminUrl) {
      const pgDir = join(dir, "pg");
      adminUrl = execFileSync("bash", ["scripts/postgres.sh", "start", pgDir], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
      cleanups.unshift(() => execFileSync("bash", ["scripts/postgres.sh", "stop", pgDir], { stdio: "ignore" }));
    }
    const name = `identity_storage_${randomBytes(4).toString("hex")}`;
    const server = knexFactory({ client: "pg", connection: adminUrl, pool: { min: 0, max: 1 } });
    await server.raw(`CREATE DATABASE ${name}`);
    cleanups.unshift(async () => {
      await server.raw(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await server.destroy();
    });
    const url = new URL(adminUrl);
    url.pathname = `/${name}`;
    databaseUrl = url.toString();
  }
  const db = await openDatabase({ service: "identity", databaseUrl, dataDir: dir, migrations });
  return {
    db,
    async close() {
      await db.destroy();
      for (const c of cleanups) await c();
    },
  };
}

const AT = "2026-01-01T00:00:00.000Z";

/** An organization, an application and a user: the parents of codes, grants and admins. */
export async function seedParents(db: Db, ids: { org: string; app: string; user: string }): Promise<void> {
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
  await db("users").insert({ id: ids.user, email: `${ids.user}@example.com`, first_name: "A", last_name: "B", created_at: AT, updated_at: AT });
}
