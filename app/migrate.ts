/**
 * `npm run migrate [identity|repository|email ...]` (default: all): brings each service's database
 * schema up to date, then exits. For deployments that migrate once before rolling out new
 * instances; services also migrate at start, so this is never required. Safe to run while
 * instances run or start: migrations take the same cross-process lock (storage/migration-lock.ts).
 * Exit codes: 0 done, 1 a migration failed, 2 bad configuration or arguments.
 */
import { loadConfigOrExit } from "./load-config.ts";
import { connectDatabase, migrateDatabase, type Migration } from "../server/storage/db.ts";
import type { ServiceName } from "./services.ts";
import { migrations as identityMigrations } from "../handlers/identity/storage/migrations/index.ts";
import { migrations as repositoryMigrations } from "../handlers/repository/storage/migrations.ts";
import { migrations as emailMigrations } from "../handlers/email/storage/migrations/index.ts";

const SERVICE_MIGRATIONS: Record<ServiceName, Record<string, Migration>> = {
  identity: identityMigrations,
  repository: repositoryMigrations,
  email: emailMigrations,
};

async function main(args: string[]): Promise<number> {
  const config = loadConfigOrExit();
  const known = Object.keys(SERVICE_MIGRATIONS) as ServiceName[];
  const unknown = args.filter((a) => !known.includes(a as ServiceName));
  if (unknown.length) {
    console.error(`Unknown service "${unknown[0]}". Known: ${known.join(", ")}\nusage: npm run migrate [-- ${known.join("|")} ...]`);
    return 2;
  }
  const names = args.length ? (args as ServiceName[]) : known;
  for (const service of names) {
    const options = { service, databaseUrl: config.DATABASE_URL, dataDir: config.DATA_DIR, migrations: SERVICE_MIGRATIONS[service] };
    const db = connectDatabase(options);
    try {
      const applied = await migrateDatabase(db, options);
      console.log(applied.length ? `${service}: applied ${applied.join(", ")}` : `${service}: already up to date`);
    } catch (err) {
      console.error(`${service}: migration failed: ${err instanceof Error ? err.message : String(err)}`);
      return 1;
    } finally {
      await db.destroy();
    }
  }
  return 0;
}

process.exitCode = await main(process.argv.slice(2));
