/**
 * Administration commands that act on a service's database directly (for a fresh install, before
 * anyone can sign in):
 *
 *   npm run admin -- repository create-user <email>     password from the prompt (no echo) or stdin
 */
import { systemClock } from "../clock.ts";
import { ConfigError, loadConfig } from "../config.ts";
import { openDatabase } from "../storage/db.ts";
import { HttpProblem } from "../http/problem.ts";
import { readSecret } from "../../cli/prompt.ts";
import { migrations as repositoryMigrations } from "../../handlers/repository/storage/migrations.ts";
import { createRepositoryQueries } from "../../handlers/repository/storage/queries.ts";
import { createAccounts } from "../../handlers/repository/domain/accounts.ts";

const USAGE = "usage: npm run admin -- repository create-user <email>   (password from the prompt, or stdin)";

async function main(args: string[]): Promise<number> {
  const config = loadConfig();
  const [service, command, email] = args;
  if (service === "repository" && command === "create-user" && email) {
    if (!/^[^@\s]+@[^@\s]+$/.test(email)) return fail(`"${email}" is not an email address.`);
    const password = await readSecret(`Password for ${email}: `);
    if (password.length < 8) return fail("The password must have at least 8 characters.");
    const db = await openDatabase({ service: "repository", databaseUrl: config.DATABASE_URL, dataDir: config.DATA_DIR, migrations: repositoryMigrations });
    try {
      const user = await createAccounts(createRepositoryQueries(db), systemClock, { maxFailures: 1, windowSeconds: 1 }).createUser(email, password);
      console.log(`Created user ${user.email} (${user.id}).`);
      return 0;
    } finally {
      await db.destroy();
    }
  }
  return fail(USAGE);
}

function fail(message: string): number {
  console.error(message);
  return 2;
}

try {
  process.exitCode = await main(process.argv.slice(2));
} catch (err) {
  if (err instanceof ConfigError || err instanceof HttpProblem) {
    console.error(err.message);
    process.exitCode = 2;
  } else throw err;
}
