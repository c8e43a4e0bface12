/**
 * A fresh, empty PostgreSQL database for a test file: on the server CONFORMANCE_DATABASE_URL names, or
 * on a cluster started here with scripts/postgres.sh. One place for what five test files wrote out.
 */
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import knexFactory from "knex";

/** The admin URL of a PostgreSQL server, and how to stop it (nothing to stop for CONFORMANCE_DATABASE_URL's). */
export function postgresServer(dir: string): { adminUrl: string; stop(): void } {
  const given = process.env.CONFORMANCE_DATABASE_URL;
  if (given) return { adminUrl: given, stop: () => {} };
  const pgDir = join(dir, "pg");
  const adminUrl = execFileSync("bash", ["scripts/postgres.sh", "start", pgDir], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "ignore"],
  }).trim();
  return { adminUrl, stop: () => void execFileSync("bash", ["scripts/postgres.sh", "stop", pgDir], { stdio: "ignore" }) };
}

/** A new database named `<prefix>_<random>` on that server: its URL, and `drop()` to remove it. */
export async function createDatabase(adminUrl: string, prefix: string): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `${prefix}_${randomBytes(4).toString("hex")}`;
  const server = knexFactory({ client: "pg", connection: adminUrl, pool: { min: 0, max: 1 } });
  await server.raw(`CREATE DATABASE ${name}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      await server.raw(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await server.destroy();
    },
  };
}

/**
 * A server and a new database on it, for one test: the database's URL. `defer` registers each
 * clean-up; they must run last-registered first (the database is dropped before its server stops).
 */
export async function postgresDatabase(dir: string, prefix: string, defer: (cleanup: () => void | Promise<void>) => void): Promise<string> {
  const pg = postgresServer(dir);
  defer(() => pg.stop());
  const database = await createDatabase(pg.adminUrl, prefix);
  defer(() => database.drop());
  return database.url;
}
