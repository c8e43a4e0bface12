/**
 * A scale: the identity and the email databases with N rows per table, each opened as its service
 * opens it (`openDatabase` with the service's migrations), in a temporary folder on SQLite or, with
 * BENCH_DATABASE_URL, in a database of its own on that PostgreSQL server, dropped at the end.
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import knexFactory from "knex";
import { type Database, type Migration, openDatabase } from "../../server/storage/db.ts";
import { migrations as emailMigrations } from "../../handlers/email/storage/index.ts";
import { migrations as identityMigrations } from "../../handlers/identity/storage/index.ts";
import { POSTGRES_URL } from "./settings.ts";

export interface Scale {
  n: number;
  identity: Database;
  email: Database;
  close(): Promise<void>;
  /** Users deleted so far (each run deletes the next, from the last one down). */
  deleted: number;
  /** Codes exchanged so far (each run takes a fresh one). */
  exchanged: number;
}

export async function openScale(n: number): Promise<Scale> {
  const identity = await openServiceDatabase(n, "identity", identityMigrations);
  const email = await openServiceDatabase(n, "email", emailMigrations);
  return {
    n,
    identity: identity.db,
    email: email.db,
    deleted: 0,
    exchanged: 0,
    async close() {
      await identity.close();
      await email.close();
    },
  };
}

async function openServiceDatabase(n: number, service: string, migrations: Record<string, Migration>) {
  const dir = mkdtempSync(join(tmpdir(), `bench-storage-${n}-`));
  let url: string | undefined;
  let drop = async () => {};
  if (POSTGRES_URL) {
    const name = `bench_${service}_${n}_${randomBytes(3).toString("hex")}`;
    const server = knexFactory({ client: "pg", connection: POSTGRES_URL, pool: { min: 0, max: 1 } });
    await server.raw(`CREATE DATABASE ${name}`);
    const u = new URL(POSTGRES_URL);
    u.pathname = `/${name}`;
    url = u.toString();
    drop = async () => {
      await server.raw(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await server.destroy();
    };
  }
  const db = await openDatabase({ service, databaseUrl: url, dataDir: dir, migrations });
  return {
    db,
    async close() {
      await db.destroy();
      await drop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The size of a SQLite database's file, MB. */
export const sqliteFileMB = (db: Database) => statSync((db.client.config.connection as { filename: string }).filename).size / 1e6;
