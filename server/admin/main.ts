/**
 * Administration commands that act on a service's database directly (for a fresh install, before
 * anyone can sign in):
 *
 *   npm run admin -- repository create-user <email>     password from the prompt (no echo) or stdin
 *   npm run admin -- identity create-org "<organization name>" <admin email> [first name] [last name]
 *                                                       creates the organization and its first admin
 *                                                       (a new user gets the password from the prompt or stdin)
 */
import { systemClock } from "../clock.ts";
import { ConfigError, loadConfig, publicUrl } from "../config.ts";
import { openDatabase } from "../storage/db.ts";
import { HttpProblem } from "../http/problem.ts";
import { readSecret } from "../../cli/prompt.ts";
import { migrations as repositoryMigrations } from "../../handlers/repository/storage/migrations.ts";
import { createRepositoryQueries } from "../../handlers/repository/storage/queries.ts";
import { createAccounts } from "../../handlers/repository/domain/accounts.ts";
import { migrations as identityMigrations } from "../../handlers/identity/storage/migrations/index.ts";
import { createCoreQueries } from "../../handlers/identity/storage/core-queries.ts";
import { createOrganizationWithAdmin } from "../../handlers/identity/domain/accounts/bootstrap.ts";

const USAGE = [
  "usage:",
  "  npm run admin -- repository create-user <email>",
  '  npm run admin -- identity create-org "<organization name>" <admin email> [first name] [last name]',
  "(passwords come from the prompt without echo, or from stdin)",
].join("\n");

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
  if (service === "identity" && command === "create-org" && args[2] && args[3]) {
    const [, , organizationName, adminEmail, firstName = "Admin", lastName = "User"] = args;
    if (!/^[^@\s]+@[^@\s]+$/.test(adminEmail!)) return fail(`"${adminEmail}" is not an email address.`);
    const db = await openDatabase({ service: "identity", databaseUrl: config.DATABASE_URL, dataDir: config.DATA_DIR, migrations: identityMigrations });
    try {
      const core = createCoreQueries(db);
      const existing = await core.findUserByEmail(adminEmail!);
      const password = existing ? "" : await readSecret(`Password for ${adminEmail}: `);
      if (!existing && password.length < 8) return fail("The password must have at least 8 characters.");
      const { organization, user } = await createOrganizationWithAdmin(core, systemClock, {
        organizationName: organizationName!, email: adminEmail!, password, firstName, lastName,
      });
      console.log(`Created organization "${organization.name}" (${organization.id}); ${user.email} administers it.`);
      console.log(`Sign in to the dashboard at ${publicUrl(config, "identity")}/dashboard`);
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
