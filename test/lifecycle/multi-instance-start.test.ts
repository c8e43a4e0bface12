/**
 * Several instances starting at the same moment on a new database (server/storage/migration-lock.ts):
 * three server processes, each running the three services, on a fresh PostgreSQL database and on
 * one fresh SQLite data directory. All of them must start and serve `/health` and `/ready`, with
 * every migration applied exactly once; `npm run migrate` run twice at once applies them once too.
 * Without the lock two instances crashed in about 4 starts of 10 (`relation "knex_migrations"
 * already exists`), and on SQLite a data directory could be left where every start fails
 * ("Migration table is already locked": two lock rows). PostgreSQL: CONFORMANCE_DATABASE_URL, or
 * a throwaway cluster from scripts/postgres.sh.
 */
import { createDatabase, postgresServer } from "../support/postgres-database.ts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import knexFactory, { type Knex } from "knex";
import { migrations as identityMigrations } from "../../handlers/identity/storage/migrations/index.ts";
import { migrations as repositoryMigrations } from "../../handlers/repository/storage/migrations.ts";
import { migrations as emailMigrations } from "../../handlers/email/storage/migrations/index.ts";
import {
  admin,
  getStatus,
  killAll,
  serverEnv,
  startProcess,
  startServer,
  type ServerProcess,
  type ServiceName,
} from "../support/server-process.ts";

const EXPECTED: Record<ServiceName, string[]> = {
  identity: Object.keys(identityMigrations).sort(),
  repository: Object.keys(repositoryMigrations).sort(),
  email: Object.keys(emailMigrations).sort(),
};
const SERVICES = Object.keys(EXPECTED) as ServiceName[];
const INSTANCES = 3;

const cleanups: Array<() => unknown> = [];
let adminUrl: string;
beforeAll(() => {
  const dir = mkdtempSync(join(tmpdir(), "multi-instance-pg-"));
  const pg = postgresServer(dir);
  adminUrl = pg.adminUrl;
  cleanups.unshift(() => {
    pg.stop();
    rmSync(dir, { recursive: true, force: true });
  });
}, 120_000);
afterAll(async () => {
  killAll();
  for (const f of cleanups) await f();
});

/** A new, empty database on the cluster; its URL. Dropped after the file. */
async function freshDatabase(): Promise<string> {
  const database = await createDatabase(adminUrl, "multi");
  cleanups.unshift(() => database.drop());
  return database.url;
}

/** Names in knex's migration table, in the order applied. */
async function appliedMigrations(db: Knex, table: string): Promise<string[]> {
  return (await db(table).orderBy("id").select("name")).map((r: { name: string }) => r.name);
}

/** Starts `INSTANCES` processes at once; every one must get all three services listening. */
async function startTogether(env: (i: number) => Record<string, string>, dataDir: (i: number) => string): Promise<ServerProcess[]> {
  const started = await Promise.allSettled(Array.from({ length: INSTANCES }, (_, i) => startServer(dataDir(i), env(i), SERVICES)));
  const failed = started.filter((s): s is PromiseRejectedResult => s.status === "rejected");
  expect(failed.map((f) => String(f.reason).slice(0, 500))).toEqual([]);
  return started.map((s) => (s as PromiseFulfilledResult<ServerProcess>).value);
}

async function expectAllServing(servers: ServerProcess[]): Promise<void> {
  for (const server of servers) {
    for (const service of SERVICES) {
      expect(await getStatus(server.urls[service]!, "/health"), `${service} /health`).toBe(200);
      expect(await getStatus(server.urls[service]!, "/ready"), `${service} /ready`).toBe(200);
    }
  }
}

async function stopAll(servers: ServerProcess[]): Promise<void> {
  for (const s of servers) s.child.kill("SIGTERM");
  expect(await Promise.all(servers.map((s) => s.exited))).toEqual(servers.map(() => 0));
}

describe("simultaneous starts on a new database", () => {
  it("PostgreSQL: three instances of each service start at once on a new database, all serve /health and /ready, every migration applied exactly once", async () => {
    const url = await freshDatabase();
    const dataDir = mkdtempSync(join(tmpdir(), "multi-instance-"));
    cleanups.unshift(() => rmSync(dataDir, { recursive: true, force: true }));
    const servers = await startTogether(
      () => ({ DATABASE_URL: url }),
      (i) => join(dataDir, String(i)),
    );
    await expectAllServing(servers);
    const db = knexFactory({ client: "pg", connection: url, pool: { min: 0, max: 1 } });
    try {
      for (const service of SERVICES) expect(await appliedMigrations(db, `${service}.knex_migrations`), service).toEqual(EXPECTED[service]);
    } finally {
      await db.destroy();
    }
    await stopAll(servers);
  }, 180_000);

  it("PostgreSQL: `npm run migrate` twice at once on a new database applies every migration once, and reports it", async () => {
    const url = await freshDatabase();
    const runs = Array.from({ length: 2 }, () =>
      startProcess("app/migrate.ts", [], serverEnv(mkdtempSync(join(tmpdir(), "migrate-")), { DATABASE_URL: url })),
    );
    expect(await Promise.all(runs.map((r) => r.exited))).toEqual([0, 0]);
    const lines = runs.flatMap((r) => r.logs.map((l) => String(l.text)));
    for (const service of SERVICES) {
      // One run applied them; the other, queued behind it, found nothing left to do.
      expect(
        lines.filter((l) => l === `${service}: applied ${EXPECTED[service].join(", ")}`),
        service,
      ).toHaveLength(1);
      expect(
        lines.filter((l) => l === `${service}: already up to date`),
        service,
      ).toHaveLength(1);
    }
    const db = knexFactory({ client: "pg", connection: url, pool: { min: 0, max: 1 } });
    try {
      for (const service of SERVICES) expect(await appliedMigrations(db, `${service}.knex_migrations`), service).toEqual(EXPECTED[service]);
    } finally {
      await db.destroy();
    }
  }, 120_000);

  it("SQLite: three instances start at once on one new data directory, all serve, migrations applied once, and their writes go to one sound file", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "multi-instance-sqlite-"));
    cleanups.unshift(() => rmSync(dataDir, { recursive: true, force: true }));
    // One user signs in from three instances at once: sign-in throttling is not under test.
    const env = { LOGIN_MAX_FAILURES: "1000", LOGIN_ADDRESS_MAX_FAILURES: "1000" };
    const servers = await startTogether(
      () => env,
      () => dataDir,
    );
    await expectAllServing(servers);
    for (const service of SERVICES) {
      const db = knexFactory({
        client: "better-sqlite3",
        connection: { filename: join(dataDir, `${service}.sqlite`) },
        useNullAsDefault: true,
      });
      try {
        expect(await appliedMigrations(db, "knex_migrations"), service).toEqual(EXPECTED[service]);
        expect(await db("knex_migrations_lock").select("is_locked"), service).toEqual([{ is_locked: 0 }]);
      } finally {
        await db.destroy();
      }
    }
    // A fourth process (the admin command) writes while they run; then all three write at once.
    admin(serverEnv(dataDir), ["repository", "create-user", "dev@example.com"], "correct horse battery staple\n");
    const logins = await Promise.all(
      servers.flatMap((s) =>
        Array.from({ length: 10 }, () =>
          fetch(`${s.urls.repository}/auth/login`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ email: "dev@example.com", password: "correct horse battery staple" }),
          }).then((r) => r.status),
        ),
      ),
    );
    // Before transactions began IMMEDIATE, most of these were 500s: SQLITE_BUSY at a read transaction's first write.
    const errors = servers.flatMap((s) =>
      s.logs.filter((l) => Number(l.level) >= 50).map((l) => (l.err as { message?: string } | undefined)?.message ?? l.msg),
    );
    expect(logins, JSON.stringify(errors.slice(0, 3))).toEqual(logins.map(() => 200));
    await stopAll(servers);
    const db = knexFactory({
      client: "better-sqlite3",
      connection: { filename: join(dataDir, "repository.sqlite") },
      useNullAsDefault: true,
    });
    try {
      expect(Number((await db("refresh_tokens").count({ n: "*" }).first())?.n)).toBe(logins.length);
      expect(await db.raw("PRAGMA integrity_check")).toEqual([{ integrity_check: "ok" }]);
    } finally {
      await db.destroy();
    }
  }, 180_000);
});
