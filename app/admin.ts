/**
 * Administration commands that act on a service's database directly (for a fresh install, before
 * anyone can sign in): `npm run admin -- <words> <arguments>`, one entry of COMMANDS each.
 * Passwords come from the prompt (no echo) or from stdin.
 */
import { systemClock } from "../server/clock.ts";
import { ConfigError } from "../server/config.ts";
import { type Config, loadConfig } from "./load-config.ts";
import { identityListener } from "../handlers/identity/config.ts";
import { repositoryTokenLifetimesOf } from "../handlers/repository/config.ts";
import { keyStates, rotateKey } from "../server/keys/rotation.ts";
import { JWKS_MAX_AGE_SECONDS, minimumActivationDelaySeconds } from "../server/keys/schedule.ts";
import { keyEncryption, KeyEncryptionError } from "../server/security/key-encryption.ts";
import { identityKeyPurposes } from "../handlers/identity/signing-keys.ts";
import { repositoryKeyPurposes } from "../handlers/repository/signing-keys.ts";
import { openDatabase } from "../server/storage/db.ts";
import { DomainError } from "../server/domain/errors.ts";
import type { Database } from "../server/storage/transaction.ts";
import { HttpProblem } from "../server/http/problem.ts";
import { readSecret } from "../server/terminal/prompt.ts";
import { CliError, Interrupted, UsageError } from "../server/terminal/errors.ts";
import { migrations as repositoryMigrations } from "../handlers/repository/storage/migrations.ts";
import { createRepositoryStorage } from "../handlers/repository/storage/index.ts";
import { createUser } from "../handlers/repository/domain/accounts.ts";
import { migrations as identityMigrations } from "../handlers/identity/storage/migrations/index.ts";
import { createIdentityStorage } from "../handlers/identity/storage/index.ts";
import { createOrganizationWithAdmin, createUserAccounts } from "../handlers/identity/domain/accounts/bootstrap.ts";
import { migrations as emailMigrations } from "../handlers/email/storage/migrations/index.ts";
import { createApiKeys } from "../handlers/email/domain/api-keys.ts";
import { createEmailStorage } from "../handlers/email/storage/index.ts";
import { generateDkimKey } from "../handlers/email/mail/dkim.ts";
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { backupSqlite } from "../server/storage/sqlite-backup.ts";
import { sendTestMail } from "./send-test-mail.ts";
import { printResetLink } from "./reset-link.ts";

export type Service = "identity" | "repository" | "email";

const MIGRATIONS = { identity: identityMigrations, repository: repositoryMigrations, email: emailMigrations };

export interface AdminContext {
  config: Config;
  /** Opens `service`'s database (bringing its schema up to date), runs `fn` on it, and closes it whatever `fn` does. */
  withServiceDb<T>(service: Service, fn: (db: Database) => Promise<T>): Promise<T>;
}

interface AdminCommand {
  /** The words that name it; `a|b` is either word. */
  words: string[];
  /** What follows the words, as the usage shows it. */
  parameters: string;
  summary: string;
  /** Whether what follows the words fits the command; anything else prints the usage. */
  accepts(rest: string[]): boolean;
  /** `rest`: what follows the words; `named`: the words as typed (which service, for `a|b`). */
  run(rest: string[], ctx: AdminContext, named: string[]): Promise<number>;
}

const COMMANDS: AdminCommand[] = [
  {
    words: ["repository", "create-user"],
    parameters: "<email>",
    summary: "creates a user; the password from the prompt or stdin",
    accepts: ([email]) => Boolean(email),
    run: ([email], ctx) => createRepositoryUser(email!, ctx),
  },
  {
    words: ["identity", "create-org"],
    parameters: '"<organization name>" <admin email> [first name] [last name]',
    summary: "creates the organization and its first admin (a new user gets the password from the prompt or stdin)",
    accepts: ([name, email]) => Boolean(name && email),
    run: ([name, email, firstName = "Admin", lastName = "User"], ctx) =>
      createOrganization({ organizationName: name!, email: email!, firstName, lastName }, ctx),
  },
  {
    words: ["identity", "create-users"],
    parameters: "<count>",
    summary:
      "makes <count> users with random passwords and prints them once, one JSON line each (a pool for the conformance suite: CONFORMANCE_IDENTITY_USERS)",
    accepts: (rest) => rest.length === 1 && Boolean(rest[0]),
    run: ([count], ctx) => createUsers(count!, ctx),
  },
  {
    words: ["email", "create-api-key"],
    parameters: "<name> [--test] [--sending-only]",
    summary: "prints a new API key (shown once)",
    accepts: ([name]) => Boolean(name),
    run: ([name, ...flags], ctx) => createApiKey(name!, flags, ctx),
  },
  {
    words: ["email", "dkim-keygen"],
    parameters: "<domain> <selector> <private key file>",
    summary: "writes a DKIM key (0600) and prints its DNS TXT record",
    accepts: ([domain, selector, file]) => Boolean(domain && selector && file),
    run: async ([domain, selector, file]) => dkimKeygen(domain!, selector!, file!),
  },
  {
    words: ["identity|repository", "rotate-keys"],
    parameters: "[--delay <90s|10m|1h|2d>]",
    summary: "adds the next signing key(s): published now, signing after the delay (SIGNING_KEY_ACTIVATION_DELAY_SECONDS)",
    accepts: () => true,
    run: (options, ctx, [service]) => signingKeys(ctx, service as "identity" | "repository", "rotate-keys", options),
  },
  {
    words: ["identity|repository", "list-keys"],
    parameters: "",
    summary: "the signing keys and their states",
    accepts: () => true,
    run: (options, ctx, [service]) => signingKeys(ctx, service as "identity" | "repository", "list-keys", options),
  },
  {
    words: ["identity", "send-test-mail"],
    parameters: "<address>",
    summary: "queues a test message to <address> and sends it through identity's mail settings, printing the outcome",
    accepts: (rest) => rest.length === 1 && Boolean(rest[0]),
    run: ([address], ctx) => sendTestMail(address!, ctx),
  },
  {
    words: ["identity", "reset-link"],
    parameters: "<email>",
    summary: "prints a password reset link for the account of <email> (15 minutes, once; no mail is sent)",
    accepts: (rest) => rest.length === 1 && Boolean(rest[0]),
    run: ([email], ctx) => printResetLink(email!, ctx),
  },
  {
    words: ["backup"],
    parameters: "<directory>",
    summary: "an online copy of each service's SQLite database",
    accepts: (rest) => rest.length === 1 && Boolean(rest[0]),
    run: ([directory], ctx) => backup(ctx.config, directory!),
  },
];

const USAGE = [
  "usage:",
  ...COMMANDS.flatMap((c) => [`  npm run admin -- ${[...c.words, c.parameters].filter(Boolean).join(" ")}`, `      ${c.summary}`]),
  "(passwords come from the prompt without echo, or from stdin)",
].join("\n");

async function main(args: string[]): Promise<number> {
  const config = loadConfig();
  const named = (c: AdminCommand) => c.words.every((word, i) => word.split("|").includes(args[i] ?? ""));
  const command = COMMANDS.find((c) => named(c) && c.accepts(args.slice(c.words.length)));
  if (!command) return fail(USAGE);
  const ctx: AdminContext = {
    config,
    async withServiceDb(service, fn) {
      const db = await openDatabase({
        service,
        databaseUrl: config.DATABASE_URL,
        dataDir: config.DATA_DIR,
        migrations: MIGRATIONS[service],
      });
      try {
        return await fn(db);
      } finally {
        await db.destroy();
      }
    },
  };
  return command.run(args.slice(command.words.length), ctx, args.slice(0, command.words.length));
}

const isEmailAddress = (text: string) => /^[^@\s]+@[^@\s]+$/.test(text);

/** A new account's password, from the prompt or stdin: at least 8 characters. */
async function newPassword(email: string): Promise<string> {
  const password = await readSecret(`Password for ${email}: `, "password");
  if (password.length < 8) throw new UsageError("The password must have at least 8 characters.");
  return password;
}

/** `repository create-user <email>`. */
async function createRepositoryUser(email: string, ctx: AdminContext): Promise<number> {
  if (!isEmailAddress(email)) return fail(`"${email}" is not an email address.`);
  const password = await newPassword(email);
  const user = await ctx.withServiceDb("repository", (db) => createUser(createRepositoryStorage(db).users, systemClock, email, password));
  console.log(`Created user ${user.email} (${user.id}).`);
  return 0;
}

/** `identity create-org`: the organization and its first admin, a user that exists or a new one. */
async function createOrganization(
  input: { organizationName: string; email: string; firstName: string; lastName: string },
  ctx: AdminContext,
): Promise<number> {
  if (!isEmailAddress(input.email)) return fail(`"${input.email}" is not an email address.`);
  const { organization, user } = await ctx.withServiceDb("identity", async (db) => {
    const storage = createIdentityStorage(db);
    const existing = await storage.users.findByEmail(input.email);
    const password = existing ? "" : await newPassword(input.email);
    return createOrganizationWithAdmin(storage, systemClock, { ...input, password });
  });
  console.log(`Created organization "${organization.name}" (${organization.id}); ${user.email} administers it.`);
  console.log(`Sign in to the dashboard at ${identityListener(ctx.config).publicUrl}/dashboard`);
  return 0;
}

/** The most users one `create-users` makes (one transaction; run it again for more). */
const MAX_CREATED_USERS = 10_000;

/**
 * `identity create-users <count>`: users with random passwords, for QA (the conformance suite's
 * CONFORMANCE_IDENTITY_USERS pool, so a run is not bounded by the registration limit). Each is
 * printed once on stdout as a JSON line `{"id","email","password"}`: the passwords are stored
 * hashed and cannot be shown again, as with create-api-key.
 */
async function createUsers(countText: string, ctx: AdminContext): Promise<number> {
  const count = /^\d+$/.test(countText) ? Number(countText) : Number.NaN;
  if (!(count >= 1 && count <= MAX_CREATED_USERS)) return fail(`<count> must be a whole number from 1 to ${MAX_CREATED_USERS}.`);
  // One random batch name keeps every email new, run after run.
  const batch = randomBytes(4).toString("hex");
  const inputs = Array.from({ length: count }, (_, i) => ({
    email: `qa-${batch}-${i + 1}@example.com`,
    password: randomBytes(18).toString("base64url"),
    firstName: "Grace",
    lastName: "Hopper",
  }));
  const rows = await ctx.withServiceDb("identity", (db) => createUserAccounts(createIdentityStorage(db), systemClock, inputs));
  console.error(`Created ${rows.length} users. Their passwords are shown once; store them now:`);
  for (const [i, row] of rows.entries()) console.log(JSON.stringify({ id: row.id, email: row.email, password: inputs[i]!.password }));
  return 0;
}

/** `email create-api-key <name> [--test] [--sending-only]`. */
async function createApiKey(name: string, options: string[], ctx: AdminContext): Promise<number> {
  const flags = new Set(options);
  const unknown = [...flags].filter((f) => f !== "--test" && f !== "--sending-only");
  if (unknown.length) return fail(`Unknown option ${unknown[0]}.\n${USAGE}`);
  const { row, key } = await ctx.withServiceDb("email", (db) =>
    createApiKeys(createEmailStorage(db).apiKeys, systemClock).create({
      name,
      test: flags.has("--test"),
      permission: flags.has("--sending-only") ? "sending_access" : "full_access",
    }),
  );
  console.error(`Created ${row.mode} API key "${row.name}" (${row.id}, ${row.permission}). It is shown once; store it now:`);
  console.log(key);
  return 0;
}

/** `email dkim-keygen <domain> <selector> <private key file>`. */
function dkimKeygen(domain: string, selector: string, file: string): number {
  if (existsSync(file)) return fail(`${file} exists; choose a new file (a key in use must not be overwritten).`);
  const key = generateDkimKey({ domain, selector });
  writeFileSync(file, key.privateKeyPem, { mode: 0o600 });
  console.log(`Private key written to ${file} (mode 0600). Configure:`);
  console.log(`  EMAIL_DKIM_DOMAIN=${domain} EMAIL_DKIM_SELECTOR=${selector} EMAIL_DKIM_PRIVATE_KEY_FILE=${file}`);
  console.log(`Publish this DNS TXT record at ${key.recordName}:`);
  console.log(`  ${key.zoneLine}`);
  return 0;
}

/** `rotate-keys` and `list-keys` of a service's signing keys (server/keys/). */
async function signingKeys(
  ctx: AdminContext,
  service: "identity" | "repository",
  command: "rotate-keys" | "list-keys",
  options: string[],
): Promise<number> {
  const { config } = ctx;
  let delaySeconds = config.SIGNING_KEY_ACTIVATION_DELAY_SECONDS;
  if (command === "rotate-keys" && options.length) {
    const parsed = options[0] === "--delay" && options.length === 2 ? parseDuration(options[1]!) : undefined;
    if (parsed === undefined) return fail(`Expected --delay <duration> (90s, 10m, 1h, 2d).\n${USAGE}`);
    const minimum = minimumActivationDelaySeconds(config.SIGNING_KEY_REFRESH_SECONDS);
    if (parsed < minimum) {
      return fail(
        `--delay must be at least ${minimum}s: every instance reads the keys every SIGNING_KEY_REFRESH_SECONDS (${config.SIGNING_KEY_REFRESH_SECONDS}s) and clients cache the JWKS for ${JWKS_MAX_AGE_SECONDS}s, so a key signing sooner could be refused; the contracts promise 10 minutes.`,
      );
    }
    delaySeconds = parsed;
  } else if (options.length) return fail(USAGE);
  const purposes =
    service === "identity" ? identityKeyPurposes() : Object.values(repositoryKeyPurposes(repositoryTokenLifetimesOf(config)));
  return ctx.withServiceDb(service, async (db) => {
    const encryption = keyEncryption(config.KEY_ENCRYPTION_KEY, config.KEY_ENCRYPTION_KEY_PREVIOUS);
    const now = systemClock.now();
    if (command === "rotate-keys") {
      // Refused as a whole when any purpose still waits for its last rotation: nothing is half-rotated.
      for (const purpose of purposes) {
        const pending = (await keyStates(db, purpose, now)).find((k) => k.state === "pending");
        if (pending)
          return fail(
            `${purpose.purpose}: key ${pending.kid} already waits to sign from ${new Date(pending.activateAtMs).toISOString()}; rotate again after that.`,
          );
      }
      for (const purpose of purposes) {
        const r = await rotateKey({ db, purpose, now, delaySeconds, encryption });
        console.log(`${r.purpose}: new key ${r.kid} is published now and signs from ${r.activateAt.toISOString()}.`);
        if (r.replaces)
          console.log(`  ${r.replaces.kid} signs until then and retires at ${r.replaces.retireAt.toISOString()} (its last token expired).`);
      }
      console.log(
        `Every instance picks the keys up within ${config.SIGNING_KEY_REFRESH_SECONDS}s (SIGNING_KEY_REFRESH_SECONDS); no restart is needed.`,
      );
      return 0;
    }
    for (const purpose of purposes) {
      console.log(`${purpose.purpose} (${purpose.alg}, tokens live up to ${purpose.maxTokenLifetimeSeconds}s):`);
      for (const k of await keyStates(db, purpose, now)) {
        const times = [`published ${new Date(k.publishAtMs).toISOString()}`, `signs from ${new Date(k.activateAtMs).toISOString()}`];
        if (k.retireAtMs !== undefined) times.push(`retires ${new Date(k.retireAtMs).toISOString()}`);
        console.log(`  ${k.state.padEnd(8)} ${k.kid}  ${times.join(", ")}`);
      }
    }
    console.log(
      encryption.enabled
        ? "Private keys are sealed under KEY_ENCRYPTION_KEY."
        : "Private keys are stored unencrypted: set KEY_ENCRYPTION_KEY to seal them.",
    );
    return 0;
  });
}

/** `backup <directory>`: every service's SQLite file, copied online into a new directory. */
async function backup(config: Config, directory: string): Promise<number> {
  if (config.DATABASE_URL) {
    return fail(
      'The services use PostgreSQL (DATABASE_URL): back it up with pg_dump, e.g. pg_dump --format=custom --schema=identity --schema=repository --schema=email "$DATABASE_URL" > platform.dump',
    );
  }
  if (existsSync(directory) && readdirSync(directory).length)
    return fail(`${directory} is not empty; choose a new directory (a backup is never overwritten).`);
  mkdirSync(directory, { recursive: true });
  let copied = 0;
  for (const service of ["identity", "repository", "email"]) {
    const source = join(config.DATA_DIR, `${service}.sqlite`);
    if (!existsSync(source)) continue;
    const { pages } = await backupSqlite(source, join(directory, `${service}.sqlite`));
    console.log(`${service}: ${pages} pages copied to ${join(directory, `${service}.sqlite`)}`);
    copied++;
  }
  if (!copied) return fail(`No database in DATA_DIR (${config.DATA_DIR}).`);
  if (config.KEY_ENCRYPTION_KEY)
    console.log("The signing keys in it are sealed: keep KEY_ENCRYPTION_KEY (not in this directory) to restore it.");
  return 0;
}

/** `90s`, `10m`, `1h`, `2d`, or plain seconds. */
function parseDuration(text: string): number | undefined {
  const m = /^(\d+)([smhd]?)$/.exec(text);
  if (!m) return undefined;
  return Number(m[1]) * { "": 1, s: 1, m: 60, h: 3600, d: 86400 }[m[2] as "" | "s" | "m" | "h" | "d"];
}

function fail(message: string): number {
  console.error(message);
  return 2;
}

try {
  process.exitCode = await main(process.argv.slice(2));
} catch (err) {
  if (err instanceof ConfigError || err instanceof HttpProblem || err instanceof DomainError || err instanceof KeyEncryptionError) {
    console.error(err.message);
    process.exitCode = 2;
  } else if (err instanceof CliError) {
    // Ctrl-C (130, the prompt already ended the line) or Ctrl-D (1) at the password prompt.
    if (!(err instanceof Interrupted)) console.error(err.message);
    process.exitCode = err.exitCode;
  } else throw err;
}
