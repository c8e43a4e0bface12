/**
 * Administration commands that act on a service's database directly (for a fresh install, before
 * anyone can sign in):
 *
 *   npm run admin -- repository create-user <email>     password from the prompt (no echo) or stdin
 *   npm run admin -- identity create-org "<organization name>" <admin email> [first name] [last name]
 *                                                       creates the organization and its first admin
 *                                                       (a new user gets the password from the prompt or stdin)
 *   npm run admin -- email create-api-key <name> [--test] [--sending-only]
 *                                                       prints a new API key (shown once)
 *   npm run admin -- email dkim-keygen <domain> <selector> <private key file>
 *                                                       writes a DKIM key (0600) and prints its DNS TXT record
 */
import { systemClock } from "../clock.ts";
import { ConfigError, loadConfig, publicUrl } from "../config.ts";
import { openDatabase } from "../storage/db.ts";
import { HttpProblem } from "../http/problem.ts";
import { readSecret } from "../../cli/prompt.ts";
import { CliError, Interrupted } from "../../cli/errors.ts";
import { migrations as repositoryMigrations } from "../../handlers/repository/storage/migrations.ts";
import { createRepositoryQueries } from "../../handlers/repository/storage/queries.ts";
import { createUser } from "../../handlers/repository/domain/accounts.ts";
import { migrations as identityMigrations } from "../../handlers/identity/storage/migrations/index.ts";
import { createCoreQueries } from "../../handlers/identity/storage/core-queries.ts";
import { createOrganizationWithAdmin } from "../../handlers/identity/domain/accounts/bootstrap.ts";
import { migrations as emailMigrations } from "../../handlers/email/storage/migrations/index.ts";
import { createApiKeys } from "../../handlers/email/domain/api-keys.ts";
import { createApiKeyQueries } from "../../handlers/email/storage/api-key-queries.ts";
import { generateDkimKey } from "../../handlers/email/mail/dkim.ts";
import { existsSync, writeFileSync } from "node:fs";

const USAGE = [
  "usage:",
  "  npm run admin -- repository create-user <email>",
  '  npm run admin -- identity create-org "<organization name>" <admin email> [first name] [last name]',
  "  npm run admin -- email create-api-key <name> [--test] [--sending-only]",
  "  npm run admin -- email dkim-keygen <domain> <selector> <private key file>",
  "(passwords come from the prompt without echo, or from stdin)",
].join("\n");

async function main(args: string[]): Promise<number> {
  const config = loadConfig();
  const [service, command, email] = args;
  if (service === "repository" && command === "create-user" && email) {
    if (!/^[^@\s]+@[^@\s]+$/.test(email)) return fail(`"${email}" is not an email address.`);
    const password = await readSecret(`Password for ${email}: `, "password");
    if (password.length < 8) return fail("The password must have at least 8 characters.");
    const db = await openDatabase({ service: "repository", databaseUrl: config.DATABASE_URL, dataDir: config.DATA_DIR, migrations: repositoryMigrations });
    try {
      const user = await createUser(createRepositoryQueries(db), systemClock, email, password);
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
      const password = existing ? "" : await readSecret(`Password for ${adminEmail}: `, "password");
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
  if (service === "email" && command === "create-api-key" && args[2]) {
    const flags = new Set(args.slice(3));
    const unknown = [...flags].filter((f) => f !== "--test" && f !== "--sending-only");
    if (unknown.length) return fail(`Unknown option ${unknown[0]}.\n${USAGE}`);
    const db = await openDatabase({ service: "email", databaseUrl: config.DATABASE_URL, dataDir: config.DATA_DIR, migrations: emailMigrations });
    try {
      const { row, key } = await createApiKeys(createApiKeyQueries(db), systemClock).create({ name: args[2], test: flags.has("--test"), permission: flags.has("--sending-only") ? "sending_access" : "full_access" });
      console.error(`Created ${row.mode} API key "${row.name}" (${row.id}, ${row.permission}). It is shown once; store it now:`);
      console.log(key);
      return 0;
    } finally {
      await db.destroy();
    }
  }
  if (service === "email" && command === "dkim-keygen" && args[2] && args[3] && args[4]) {
    const [, , domain, selector, file] = args;
    if (existsSync(file!)) return fail(`${file} exists; choose a new file (a key in use must not be overwritten).`);
    const key = generateDkimKey({ domain: domain!, selector: selector! });
    writeFileSync(file!, key.privateKeyPem, { mode: 0o600 });
    console.log(`Private key written to ${file} (mode 0600). Configure:`);
    console.log(`  EMAIL_DKIM_DOMAIN=${domain} EMAIL_DKIM_SELECTOR=${selector} EMAIL_DKIM_PRIVATE_KEY_FILE=${file}`);
    console.log(`Publish this DNS TXT record at ${key.recordName}:`);
    console.log(`  ${key.zoneLine}`);
    return 0;
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
  } else if (err instanceof CliError) {
    // Ctrl-C (130, the prompt already ended the line) or Ctrl-D (1) at the password prompt.
    if (!(err instanceof Interrupted)) console.error(err.message);
    process.exitCode = err.exitCode;
  } else throw err;
}
