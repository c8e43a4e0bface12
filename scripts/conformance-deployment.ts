/**
 * `npm test`'s proof that QA's path works: the whole conformance suite, in deployment mode, against
 * real deployments started here as docs/operations.md describes them, must be green.
 *
 *   node --import tsx scripts/conformance-deployment.ts [sqlite] [postgres] [--summary=<file>]
 *
 * (both kinds by default; --summary writes {passed, failed, runs} for npm test's count)
 *
 * - sqlite: one process of app/main.ts (all three services) on free ports of 127.0.0.1, SQLite in
 *   a temp DATA_DIR, nothing else set but what docs/operations.md, "Configuration", says a deployment sets.
 * - postgres: the deployed shape: two such processes on one PostgreSQL database (a throwaway cluster
 *   from scripts/postgres.sh, or a throwaway database on CONFORMANCE_DATABASE_URL's server), one
 *   nginx per service (scripts/nginx.sh) with both instances as upstreams, TRUST_PROXY naming it,
 *   and every public URL the proxy's: the suite talks to the proxies only.
 *
 * Each run prepares the deployment with `npm run admin` (docs/contributing.md, "Against a deployment (QA)": the
 * organization admin, the email API key, the repository user and a pool of identity users), runs
 * `npm run conformance` with the CONFORMANCE_* settings and its reports in a temp folder, and fails
 * unless the suite passed with 0 failed, no test "not run" and a reason for every skip. The two
 * runs go side by side, each suite's output in its own file, printed whole when that run is not
 * green; each run's counts are printed at the end. Every process it starts it stops, on success,
 * failure or a signal.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { promisify } from "node:util";
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import knexFactory from "knex";
import { freePort } from "../support/free-port.ts";

const root = join(import.meta.dirname, "..");
const SERVICES = ["identity", "repository", "email"] as const;
type Service = (typeof SERVICES)[number];
/** Users the pool holds: more than one run of the suite takes (its report says how many it used). */
const POOL_SIZE = 80;
/** Repository users, one per file that asks for a target (CONFORMANCE_REPOSITORY_USERS): files must not poll each other's builds. */
const REPOSITORY_POOL_SIZE = 14;

/**
 * What one deployment holds, to undo last first: its processes, proxies, database and folder. Each
 * run has its own (the runs go side by side); a signal ends every run's.
 */
class Resources {
  private readonly undo: Array<() => void | Promise<void>> = [];
  readonly children = new Set<ChildProcess>();
  /** Process groups (the suite: vitest and its workers) to end at once on a signal. */
  readonly groups = new Set<number>();
  constructor() {
    live.add(this);
  }
  push(step: () => void | Promise<void>): void {
    this.undo.push(step);
  }
  async release(): Promise<void> {
    while (this.undo.length) {
      try {
        await this.undo.pop()!();
      } catch (err) {
        console.error(`clean-up: ${(err as Error).message}`);
      }
    }
    live.delete(this);
  }
  kill(): void {
    for (const pid of this.groups) {
      try {
        process.kill(-pid, "SIGKILL");
      } catch {
        // already gone
      }
    }
    for (const c of this.children) c.kill("SIGKILL");
  }
}
const live = new Set<Resources>();

for (const signal of ["SIGINT", "SIGTERM"] as const)
  process.on(signal, () => {
    for (const r of live) r.kill();
    void Promise.all([...live].map((r) => r.release())).finally(() => process.exit(130));
  });

const run = promisify(execFile);

/**
 * The environment of a deployment's process: PATH and HOME from here, then only the settings given
 * (no CONFORMANCE_*, no test settings leak in: a deployment is configured as docs/operations.md says).
 */
function deploymentEnv(settings: Record<string, string>): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? tmpdir(), ...settings };
}

/** `npm run admin -- <args>` on the deployment's storage, `input` on its stdin (passwords); resolves with its stdout. */
function admin(settings: Record<string, string>, args: string[], input = ""): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", "app/admin.ts", ...args], {
      cwd: root,
      env: deploymentEnv({ ...settings, LOG_LEVEL: "silent" }),
      stdio: ["pipe", "pipe", "inherit"],
    });
    let out = "";
    child.stdout.on("data", (c: Buffer) => (out += c.toString("utf8")));
    child.on("error", reject);
    child.on("exit", (code) => (code === 0 ? resolve(out) : reject(new Error(`npm run admin -- ${args.join(" ")} exited with ${code}`))));
    child.stdin.end(input);
  });
}

/** Starts app/main.ts with `settings`, its output in `logFile`; stopped (SIGTERM, then waited for) at clean-up. */
function startInstance(res: Resources, settings: Record<string, string>, logFile: string): ChildProcess {
  const log = openSync(logFile, "a");
  const child = spawn(process.execPath, ["--import", "tsx", "app/main.ts"], {
    cwd: root,
    env: deploymentEnv(settings),
    stdio: ["ignore", log, log],
  });
  closeSync(log);
  res.children.add(child);
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.once("exit", () => res.children.delete(child));
  res.push(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
    const killer = setTimeout(() => child.kill("SIGKILL"), 30_000);
    await exited;
    clearTimeout(killer);
  });
  return child;
}

/** Waits until GET <url>/ready answers 200 (each instance, or a proxy in front of them). */
async function ready(url: string, instances: ChildProcess[], logFile: string): Promise<void> {
  const deadline = Date.now() + 180_000;
  for (;;) {
    const dead = instances.find((c) => c.exitCode !== null || c.signalCode !== null);
    if (dead) throw new Error(`an instance exited before ${url} was ready:\n${tail(logFile)}`);
    try {
      const res = await fetch(`${url}/ready`);
      await res.arrayBuffer();
      if (res.status === 200) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`${url}/ready did not answer 200 in time:\n${tail(logFile)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const tail = (file: string) => readFileSync(file, "utf8").split("\n").slice(-30).join("\n");

/** One of the project's shell helpers (postgres.sh, nginx.sh); resolves with the line it prints (a URL). */
async function bash(script: string, args: string[]): Promise<string> {
  const { stdout, stderr } = await run("bash", [join(root, script), ...args], { encoding: "utf8" });
  if (stderr.trim()) process.stderr.write(stderr);
  return stdout.trim();
}

/** A PostgreSQL database for one deployment: a throwaway one on CONFORMANCE_DATABASE_URL's server, or a throwaway cluster. */
async function postgresDatabase(res: Resources, dir: string): Promise<string> {
  const server = process.env.CONFORMANCE_DATABASE_URL;
  if (!server) {
    res.push(async () => void (await bash("scripts/postgres.sh", ["stop", join(dir, "pg")])));
    return bash("scripts/postgres.sh", ["start", join(dir, "pg")]);
  }
  const name = `deployment_${randomBytes(6).toString("hex")}`;
  const admin = knexFactory({ client: "pg", connection: server, pool: { min: 0, max: 1 } });
  await admin.raw(`CREATE DATABASE ${name}`);
  res.push(async () => {
    await admin.raw(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.destroy();
  });
  const url = new URL(server);
  url.pathname = `/${name}`;
  return url.toString();
}

/** Free ports for one instance's three services. */
async function instancePorts(): Promise<Record<Service, number>> {
  return { identity: await freePort(), repository: await freePort(), email: await freePort() };
}

const portSettings = (ports: Record<Service, number>) => ({
  IDENTITY_PORT: String(ports.identity),
  REPOSITORY_PORT: String(ports.repository),
  EMAIL_PORT: String(ports.email),
  // The inbound SMTP listener's default port would collide between instances and with anything else here.
  EMAIL_INBOUND_SMTP_PORT: "0",
});

const publicUrlSettings = (urls: Record<Service, string>) => ({
  IDENTITY_PUBLIC_URL: urls.identity,
  REPOSITORY_PUBLIC_URL: urls.repository,
  EMAIL_PUBLIC_URL: urls.email,
});

interface Deployment {
  urls: Record<Service, string>;
  /** What every admin command needs to find the deployment's storage. */
  storage: Record<string, string>;
}

/** sqlite: one process, SQLite in `dir`. Nothing routes by /ready in front of it, so SIGTERM needs no delay (docs/operations.md, "Probes and graceful shutdown"). */
async function sqliteDeployment(res: Resources, dir: string): Promise<Deployment> {
  const ports = await instancePorts();
  const urls = Object.fromEntries(SERVICES.map((s) => [s, `http://127.0.0.1:${ports[s]}`])) as Record<Service, string>;
  const storage = { DATA_DIR: join(dir, "data") };
  const log = join(dir, "instance.log");
  const instance = startInstance(res, { ...storage, ...portSettings(ports), SHUTDOWN_DELAY_MS: "0" }, log);
  for (const s of SERVICES) await ready(urls[s], [instance], log);
  return { urls, storage };
}

/** postgres: two processes on one database, behind one nginx per service (the proxies' URLs are the public URLs). */
async function postgresDeployment(res: Resources, dir: string): Promise<Deployment> {
  const storage = { DATABASE_URL: await postgresDatabase(res, dir) };
  const instances = [await instancePorts(), await instancePorts()];
  const urls = {} as Record<Service, string>;
  for (const s of SERVICES) {
    const proxyDir = join(dir, `nginx-${s}`);
    res.push(async () => void (await bash("scripts/nginx.sh", ["stop", proxyDir])));
    urls[s] = await bash("scripts/nginx.sh", ["start", proxyDir, ...instances.map((p) => `127.0.0.1:${p[s]}`)]);
  }
  // Migrations first (docs/operations.md, "Several instances, migrations"), so the instances start on an up-to-date database.
  await run(process.execPath, ["--import", "tsx", "app/migrate.ts"], { cwd: root, env: deploymentEnv({ ...storage, LOG_LEVEL: "warn" }) });
  const started = instances.map((ports, i) =>
    startInstance(
      res,
      { ...storage, ...portSettings(ports), ...publicUrlSettings(urls), TRUST_PROXY: "127.0.0.1", SHUTDOWN_DELAY_MS: "0" },
      join(dir, `instance-${i + 1}.log`),
    ),
  );
  for (const [i, ports] of instances.entries())
    for (const s of SERVICES) await ready(`http://127.0.0.1:${ports[s]}`, started, join(dir, `instance-${i + 1}.log`));
  for (const s of SERVICES) await ready(urls[s], started, join(dir, "instance-1.log"));
  return { urls, storage };
}

interface Report {
  runs: Array<{ label: string; passed: number; failed: number; skipped: number; notRun?: number }>;
  tests: Array<{ file: string; title: string; status: string; skipReason?: string; reason?: string; failure?: string }>;
}

/** Prepares the deployment with `npm run admin`, runs the whole suite against it and judges the report. */
interface RunResult {
  ok: boolean;
  summary: string;
  counts?: { label: string; passed: number; failed: number; skipped: number; notRun: number; seconds: number };
  /** The suite's whole output. */
  log?: string;
}

async function runSuite(res: Resources, label: string, dir: string, deployment: Deployment): Promise<RunResult> {
  const { urls, storage } = deployment;
  const adminPassword = randomBytes(12).toString("base64url");
  const userPassword = randomBytes(12).toString("base64url");
  // The four commands at once: each is mostly the start of a Node process.
  const [, , keyOutput, users] = await Promise.all([
    admin(storage, ["identity", "create-org", "QA", "qa-admin@example.com"], `${adminPassword}\n`),
    admin(storage, ["repository", "create-user", "qa-user@example.com"], `${userPassword}\n`),
    admin(storage, ["email", "create-api-key", "qa"]),
    admin(storage, ["identity", "create-users", String(POOL_SIZE)]),
  ]);
  const apiKey = keyOutput.trim().split("\n").at(-1)!;
  const pool = join(dir, "users.jsonl");
  writeFileSync(pool, users, { mode: 0o600 });
  // The repository's users, made as QA makes them (one admin command each), a few at a time.
  const repositoryUsers: Array<{ email: string; password: string }> = [];
  for (let i = 0; i < REPOSITORY_POOL_SIZE; i += 4) {
    const batch = Array.from({ length: Math.min(4, REPOSITORY_POOL_SIZE - i) }, (_, j) => ({
      email: `qa-user-${i + j}@example.com`,
      password: randomBytes(12).toString("base64url"),
    }));
    await Promise.all(batch.map((u) => admin(storage, ["repository", "create-user", u.email], `${u.password}\n`)));
    repositoryUsers.push(...batch);
  }
  const repositoryPool = join(dir, "repository-users.jsonl");
  writeFileSync(repositoryPool, repositoryUsers.map((u) => JSON.stringify(u)).join("\n") + "\n", { mode: 0o600 });

  const reportDir = join(dir, "report");
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("VITEST") && !k.startsWith("CONFORMANCE_")));
  const started = Date.now();
  // Its output goes to a file (the runs go side by side), shown whole when the run is not green.
  const logFile = join(dir, "conformance.log");
  const log = openSync(logFile, "a");
  const suite = spawn(process.execPath, ["--import", "tsx", "scripts/conformance.ts"], {
    cwd: root,
    stdio: ["ignore", log, log],
    detached: true,
    env: {
      ...env,
      CONFORMANCE_REPORT_DIR: reportDir,
      CONFORMANCE_IDENTITY_URL: urls.identity,
      CONFORMANCE_IDENTITY_ADMIN_EMAIL: "qa-admin@example.com",
      CONFORMANCE_IDENTITY_ADMIN_PASSWORD: adminPassword,
      CONFORMANCE_IDENTITY_USERS: pool,
      CONFORMANCE_REPOSITORY_URL: urls.repository,
      CONFORMANCE_REPOSITORY_EMAIL: "qa-user@example.com",
      CONFORMANCE_REPOSITORY_PASSWORD: userPassword,
      CONFORMANCE_REPOSITORY_USERS: repositoryPool,
      CONFORMANCE_EMAIL_URL: urls.email,
      CONFORMANCE_EMAIL_API_KEY: apiKey,
    },
  });
  closeSync(log);
  res.groups.add(suite.pid!);
  const ended = await new Promise<{ status: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    suite.once("exit", (status, signal) => {
      res.groups.delete(suite.pid!);
      resolve({ status, signal });
    }),
  );
  const seconds = Math.round((Date.now() - started) / 1000);
  let report: Report;
  try {
    report = JSON.parse(readFileSync(join(reportDir, "conformance-report.json"), "utf8")) as Report;
  } catch (err) {
    return {
      ok: false,
      summary: `${label}: no report (${(err as Error).message}); npm run conformance ended with ${ended.status}`,
      log: readFileSync(logFile, "utf8"),
    };
  }
  const counts = report.runs[0]!;
  const notRun = report.tests.filter((t) => t.status === "not run");
  const reasonless = report.tests.filter((t) => t.status !== "passed" && t.status !== "failed" && t.status !== "not run" && !t.skipReason);
  const problems = [
    ...(ended.status !== 0 ? [`npm run conformance exited with ${ended.status ?? ended.signal}`] : []),
    ...(counts.failed ? [`${counts.failed} failed`] : []),
    ...report.tests.filter((t) => t.status === "failed").map((t) => `failed: ${t.file}  ${t.title}: ${t.failure ?? ""}`),
    ...(counts.passed === 0 ? ["nothing passed"] : []),
    ...notRun.map((t) => `not run: ${t.file}  ${t.title}: ${t.reason ?? ""}`),
    ...reasonless.map((t) => `skipped without a reason: ${t.file}  ${t.title}`),
  ];
  const summary =
    `${label}: ${counts.passed} passed, ${counts.skipped} skipped, ${counts.failed} failed, ${notRun.length} not run (${seconds} s)` +
    problems.map((p) => `\n  - ${p}`).join("");
  const output = readFileSync(logFile, "utf8");
  // What the pool served, and the suite's own count.
  const notes = output.split("\n").filter((l) => /^identity user pool|^conformance: \d+ passed/.test(l));
  return {
    ok: problems.length === 0,
    summary: [summary, ...notes.map((n) => `  ${n}`)].join("\n"),
    log: output,
    counts: { label, passed: counts.passed, failed: counts.failed, skipped: counts.skipped, notRun: notRun.length, seconds },
  };
}

/** One deployment of `kind`, set up, checked by the whole suite, and taken down. */
async function deployAndCheck(kind: "sqlite" | "postgres"): Promise<RunResult> {
  const label = kind === "sqlite" ? "deployment on SQLite (one instance)" : "deployment on PostgreSQL (two instances behind nginx)";
  const res = new Resources();
  const dir = mkdtempSync(join(tmpdir(), `conformance-deployment-${kind}-`));
  res.push(() => rmSync(dir, { recursive: true, force: true }));
  console.log(`${label}: starting (${dir})`);
  try {
    const deployment = kind === "sqlite" ? await sqliteDeployment(res, dir) : await postgresDeployment(res, dir);
    console.log(`${label}: ${SERVICES.map((s) => `${s} ${deployment.urls[s]}`).join(", ")}; running the suite`);
    return await runSuite(res, label, dir, deployment);
  } catch (err) {
    return { ok: false, summary: `${label}: could not run: ${(err as Error).message}` };
  } finally {
    await res.release();
  }
}

async function main(): Promise<number> {
  const args = process.argv.slice(2);
  const summaryFile = args.find((a) => a.startsWith("--summary="))?.slice("--summary=".length);
  const asked = args.filter((a) => !a.startsWith("--"));
  const kinds = asked.length ? asked : ["sqlite", "postgres"];
  const unknown = kinds.filter((k) => k !== "sqlite" && k !== "postgres");
  if (unknown.length) throw new Error(`unknown deployment kind ${unknown.join(", ")} (sqlite, postgres)`);
  if (summaryFile) rmSync(summaryFile, { force: true });
  // Side by side: much of a run is waiting on its deployment (sign-ins hash passwords, mail settles),
  // so two runs at once take less than two runs one after the other.
  const results = await Promise.all((kinds as Array<"sqlite" | "postgres">).map(deployAndCheck));
  const ok = results.every((r) => r.ok);
  for (const r of results)
    if (!r.ok && r.log) console.log(`\n=== ${r.summary.split("\n")[0]!.split(":")[0]}: the suite's output ===\n${r.log}`);
  console.log(`\n=== conformance against deployments ===\n${results.map((r) => r.summary).join("\n")}`);
  if (summaryFile) {
    const runs = results.flatMap((r) => (r.counts ? [r.counts] : []));
    const passed = runs.reduce((n, r) => n + r.passed, 0);
    // A deployment that could not start counts as a failure, and a red step never counts as 0 failed.
    const counted = runs.reduce((n, r) => n + r.failed + r.notRun, 0) + (kinds.length - runs.length);
    const failed = ok ? counted : Math.max(counted, 1);
    writeFileSync(summaryFile, `${JSON.stringify({ passed, failed, runs }, null, 2)}\n`);
  }
  return ok ? 0 : 1;
}

process.exitCode = await main();
