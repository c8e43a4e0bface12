/**
 * The SQLite planner rule over every statement the services prepare through
 * server/storage/sqlite/statements.ts: each service's storage is built on SQLite (which defines
 * its statements), then every statement the layer recorded is checked: no bound parameter is left
 * in a `= ?` term or a `LIMIT ?` (the layer wrote it `+?`, so SQLite does not re-prepare it on
 * every run: test/storage/sqlite-statement-reuse.test.ts shows the effect), and it prepares on a migrated
 * schema of one of the services (a column or table that schema.ts names but the migrations do not
 * fails here). A store added later is covered once its service's storage is built below.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createIdentityStorage } from "../../handlers/identity/storage/index.ts";
import { migrations as identityMigrations } from "../../handlers/identity/storage/migrations/index.ts";
import { createRepositoryStorage } from "../../handlers/repository/storage/index.ts";
import { migrations as repositoryMigrations } from "../../handlers/repository/storage/migrations.ts";
import { migrations as emailMigrations } from "../../handlers/email/storage/migrations/index.ts";
import { createEmailStorage } from "../../handlers/email/storage/index.ts";
import { createWebhookStorage } from "../../server/webhooks/storage/index.ts";
import "../../server/storage/transaction.ts";
import { type Connection, definedStatements, plannerSafe, withPrepared } from "../../server/storage/sqlite/statements.ts";
import { openServiceDb, type IdentityDb } from "../support/storage-fixtures.ts";

/** A bare parameter the planner may weigh: `= ?` (not `<=`, `>=`, `!=`) or `LIMIT ?`, outside quotes. */
const WEIGHED_BARE = /((?<![<>!=])=|\bLIMIT)\s*(\?|[@:$][A-Za-z_])/i;
const outsideQuotes = (sql: string) => sql.replace(/'(?:[^']|'')*'|"(?:[^"]|"")*"/g, "''");

let dbs: IdentityDb[] = [];
beforeAll(async () => {
  const [identity, repository, email] = await Promise.all([
    openServiceDb("sqlite", "identity", identityMigrations),
    openServiceDb("sqlite", "repository", repositoryMigrations),
    openServiceDb("sqlite", "email", emailMigrations),
  ]);
  dbs = [identity, repository, email];
  // Each service's storage, as its service.ts builds it on SQLite: this defines their statements.
  createIdentityStorage(identity.db);
  createWebhookStorage(identity.db, { table: "webhooks", scopeColumn: "application_id" });
  createRepositoryStorage(repository.db);
  createEmailStorage(email.db);
  createWebhookStorage(email.db, { table: "webhooks", scopeColumn: "scope" });
}, 60_000);
afterAll(async () => {
  for (const t of dbs) await t.close();
});

describe("the SQLite planner rule on every prepared statement", () => {
  it("the services define their statements through the layer", () => {
    // The identity grants' and applications' statements, the email messages', the savepoints'.
    expect(definedStatements().size).toBeGreaterThan(20);
  });

  it("no statement leaves a bound parameter in a `= ?` term or a LIMIT, and the rule is already applied to each", () => {
    const broken = [...definedStatements()].filter((sql) => WEIGHED_BARE.test(outsideQuotes(sql)) || plannerSafe(sql) !== sql);
    expect(broken).toEqual([]);
  });

  it("every statement prepares on the migrated schema of one of the services", async () => {
    const connections = await Promise.all(dbs.map((t) => withPrepared(t.db, {})((_s, conn) => conn)));
    const prepares = (conn: Connection, sql: string) => {
      try {
        conn.prepare(sql);
        return true;
      } catch {
        return false;
      }
    };
    const unprepared = [...definedStatements()].filter((sql) => !connections.some((conn) => prepares(conn, sql)));
    expect(unprepared).toEqual([]);
  });
});
