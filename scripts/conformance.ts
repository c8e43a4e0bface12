/**
 * Runs the conformance suite and writes the clause report.
 *
 *   npm run conformance                 SQLite (services started by the suite)
 *   npm run conformance -- --postgres   SQLite and PostgreSQL at once (a throwaway cluster from
 *                                        scripts/postgres.sh, or CONFORMANCE_DATABASE_URL)
 *   CONFORMANCE_IDENTITY_URL=… npm run conformance     against a deployment (docs/contributing.md,
 *                                                      "Against a deployment (QA)": each
 *                                                      service's URL and credentials; with
 *                                                      CONFORMANCE_IDENTITY_USERS, a pool of pre-made
 *                                                      users, each taken once per run)
 *
 * The suite is conformance/ only. A file that could not start (its beforeAll threw) is a failure,
 * "(did not run) <file>: <why>", and each of its tests is reported "not run" with that reason.
 *
 * The report lists every clause of the seeds (../shared/conformance-clauses.md, or the copy in
 * conformance/clauses.md) and every project decision (X-…) named by a test: passed, failed or
 * not covered, per run, and where each run's services were (in-process SQLite or PostgreSQL, or a
 * deployment's URL, per service: services without a CONFORMANCE_<SERVICE>_URL still run in-process).
 * Tests that cannot run against a deployment are skipped with their reason, never counted as
 * passed.
 *
 * Clauses are counted from every clause ID in a test's own title (scripts/clause-report.ts), in
 * conformance/ and test/ alike: `--project-tests=<summary.json>` (npm test passes the summary its
 * project-tests step wrote, scripts/vitest-runner.ts) adds the project tests' results as a run of
 * their own; without it the titles test/ holds are listed (`vitest list`) and the report names
 * the clauses that rest only on project tests that did not run. A complete in-process run (no
 * file arguments, not a deployment) fails when a seed clause has no passing test. Written to conformance-report.txt, conformance-report.json (every test with its target)
 * and conformance-report.junit.xml (JUnit, for CI systems), in the project folder or
 * CONFORMANCE_REPORT_DIR.
 *
 * Beside it, the contract coverage (scripts/contract-coverage.ts): every answer of every run is
 * recorded and checked against its document (support/contract/), and
 * contract-coverage.txt/.json say which declared responses each run produced, which have a reason
 * in conformance/contract-coverage-allowlist.yaml, and which were never produced. Its gate fails
 * the run like a failed test.
 */
import { execFileSync } from "node:child_process";
import { firstLineOf, listVitest, NOT_RUN, runVitest, type TestResult } from "./vitest-runner.ts";
import { junitXml } from "./junit.ts";
import { type ClauseRow, clauseGate, clauseRows, clauseText, type ListedTest, PROJECT, type ReportRun } from "./clause-report.ts";
import {
  computeCoverage,
  coverageText,
  currentDeclaredResponses,
  gateFailures,
  loadAllowList,
  mockCoverage,
  readMockRecord,
  readObservations,
  type RunCoverage,
  type RunScope,
} from "./contract-coverage.ts";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
/** Where the reports go: the project folder, or CONFORMANCE_REPORT_DIR (CI artefacts; runs side by side). */
const reportDir = resolve(process.env.CONFORMANCE_REPORT_DIR ?? root);
export function readClauses(): Array<{ id: string; behaviour: string }> {
  const shared = join(root, "../shared/conformance-clauses.md");
  const text = readFileSync(existsSync(shared) ? shared : join(root, "conformance/clauses.md"), "utf8");
  return [...text.matchAll(/^\| ([A-Z]+(?:-[A-Z]+)*-\d+) \| (.+) \|$/gm)].map((m) => ({ id: m[1]!, behaviour: m[2]! }));
}

/**
 * Where the workers of a run write what they observed (conformance/harness/contract-recorder.ts):
 * one folder per run of this process, so runs side by side (other checkouts' helpers, CI jobs)
 * never mix or delete each other's records. Removed once the report is written.
 */
const observationsDir = (label: string) => join(root, ".tmp/contract-coverage", `${label}-${process.pid}`);

/**
 * Where the workers of a run claim the users of CONFORMANCE_IDENTITY_USERS (conformance/harness/
 * user-pool.ts): one empty folder per run, so each pool entry serves one test of the run.
 */
const claimsDir = (label: string) => join(root, ".tmp/user-claims", `${label}-${process.pid}`);

/** "identity user pool: 40 of 150 used", when the run was given one. */
function poolUse(label: string): string | undefined {
  const pool = process.env.CONFORMANCE_IDENTITY_USERS;
  if (!pool) return undefined;
  const size = existsSync(pool)
    ? readFileSync(pool, "utf8")
        .split("\n")
        .filter((l) => l.trim()).length
    : 0;
  const used = existsSync(claimsDir(label)) ? readdirSync(claimsDir(label)).length : 0;
  return `identity user pool (CONFORMANCE_IDENTITY_USERS): ${used} of ${size} used${used >= size ? "; it ran out, later tests registered users" : ""}`;
}

/**
 * One run of the suite on `label`'s services. With `logFile`, vitest writes there instead of this
 * process's output, and the run's lines are printed whole when it has ended and `printAfter` has
 * settled (runs side by side, printed in order).
 */
async function runSuite(
  label: string,
  env: Record<string, string>,
  files: string[],
  logFile?: string,
  printAfter?: Promise<unknown>,
): Promise<TestResult[]> {
  const heading = `\n=== conformance on ${label} ===`;
  if (!logFile) console.log(heading);
  rmSync(observationsDir(label), { recursive: true, force: true });
  rmSync(claimsDir(label), { recursive: true, force: true });
  mkdirSync(claimsDir(label), { recursive: true });
  const run = await runVitest({
    root,
    outFile: join(reportDir === root ? join(root, ".tmp") : reportDir, `vitest-${label}.json`),
    args: files,
    env: { ...env, CONTRACT_COVERAGE_DIR: observationsDir(label), CONFORMANCE_IDENTITY_USERS_CLAIMS: claimsDir(label) },
    ...(logFile ? { logFile } : {}),
  });
  if (logFile) {
    await printAfter?.catch(() => {});
    console.log(heading);
    process.stdout.write(readFileSync(logFile, "utf8"));
    rmSync(logFile, { force: true });
  }
  const pool = poolUse(label);
  if (pool) console.log(`\n${pool}`);
  rmSync(claimsDir(label), { recursive: true, force: true });
  if (run.problems.length)
    console.error(
      `\nThese did not run as they should on ${label} (each counts as a failure):\n${run.problems.map((p) => `  - ${p}`).join("\n")}`,
    );
  // Each problem is a failure of its own, so a crashed file can never hide behind "0 failed".
  return [...run.results, ...run.problems.map((p) => ({ title: `(did not run) ${p}`, status: "failed", file: p.split(":")[0]! }))];
}

/** What npm test's project-tests step ran (scripts/vitest-runner.ts's summary), or why it cannot be read. */
function readProjectTests(file: string): { generatedAt?: string; results: TestResult[] } | { error: string } {
  if (!existsSync(file)) return { error: `${file} does not exist` };
  const summary = JSON.parse(readFileSync(file, "utf8")) as { generatedAt?: string; tests?: TestResult[] };
  if (!summary.tests) return { error: `${file} lists no tests (written by an older scripts/vitest-runner.ts)` };
  return { generatedAt: summary.generatedAt, results: summary.tests };
}

/** The project tests that did not run here, by title, so the report can name the clauses they prove. */
function listProjectTests(): { tests?: ListedTest[]; note: string } {
  if (!existsSync(join(root, "test")))
    return { note: "project tests: not here (no test/ folder); clauses they alone name are not covered" };
  const listed = listVitest({ root, outFile: join(root, ".tmp", `vitest-list-${process.pid}.json`), args: ["test/"] });
  rmSync(join(root, ".tmp", `vitest-list-${process.pid}.json`), { force: true });
  if ("error" in listed) return { note: `project tests: did not run and could not be listed (${listed.error})` };
  return { tests: listed.tests, note: `project tests: did not run (${listed.tests.length} tests in test/; npm test runs them)` };
}

function startPostgres(): { url: string; stop(): void } {
  const dir = mkdtempSync(join(tmpdir(), "conformance-pg-"));
  const url = execFileSync("bash", [join(root, "scripts/postgres.sh"), "start", dir], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"],
  }).trim();
  return {
    url,
    stop: () => {
      execFileSync("bash", [join(root, "scripts/postgres.sh"), "stop", dir], { stdio: "inherit" });
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const SERVICES = ["identity", "repository", "email"] as const;

/** Where each service of a run lives: the deployment URL when CONFORMANCE_<SERVICE>_URL is set, else in-process on the run's storage. */
function serviceTargets(storage: "sqlite" | "postgres"): Record<string, string> {
  const local = storage === "postgres" ? "in-process on PostgreSQL" : "in-process on SQLite";
  return Object.fromEntries(SERVICES.map((s) => [s, process.env[`CONFORMANCE_${s.toUpperCase()}_URL`]?.replace(/\/$/, "") ?? local]));
}

/** The target of one file's results: its service's (conformance/<service>/…), or every service's for the platform files. */
function targetOf(targets: Record<string, string>, file: string): string {
  const service = /conformance\/([^/]+)\//.exec(file)?.[1] ?? "";
  if (targets[service]) return targets[service]!;
  const distinct = [...new Set(Object.values(targets))];
  return distinct.length === 1 ? distinct[0]! : SERVICES.map((s) => `${s}: ${targets[s]}`).join(", ");
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const files = args.filter((a) => !a.startsWith("--"));
  const projectTestsFile = args.find((a) => a.startsWith("--project-tests="))?.slice("--project-tests=".length);
  // The folder, by its absolute path: a bare "conformance" is a substring filter that also picks
  // files elsewhere whose name contains the word (test/tooling/conformance-report-failures.test.ts).
  const targets = files.length ? files : [`${join(root, "conformance")}/`];
  // A service's URL, not CONFORMANCE_DATABASE_URL (the in-process services' PostgreSQL server).
  const external = SERVICES.some((s) => process.env[`CONFORMANCE_${s.toUpperCase()}_URL`]);
  const runs: Array<{ label: string; results: TestResult[]; targets: Record<string, string> }> = [];

  // Without --postgres, in-process services use SQLite unless CONFORMANCE_DATABASE_URL says otherwise;
  // with it, SQLite whatever the environment says and, at once, PostgreSQL (that URL's server, or a throwaway one).
  const both = args.includes("--postgres") && !external;
  const firstStorage = process.env.CONFORMANCE_DATABASE_URL && !both ? "postgres" : "sqlite";
  const firstLabel = external ? "deployment" : firstStorage;
  const firstEnv: Record<string, string> = both ? { CONFORMANCE_DATABASE_URL: "" } : {};
  if (!both) {
    runs.push({ label: firstLabel, results: await runSuite(firstLabel, firstEnv, targets), targets: serviceTargets(firstStorage) });
  } else {
    // The two runs at once: each is latency-bound (one run keeps about one core busy), so together they
    // fill the two cores in little more than one run's time. Each writes its own log, printed whole after
    // both ended, SQLite's first.
    let pg: { url: string; stop(): void } | undefined;
    const url = process.env.CONFORMANCE_DATABASE_URL ?? (pg = startPostgres()).url;
    const log = (label: string) => join(root, ".tmp", `conformance-${label}-${process.pid}.log`);
    try {
      const sqliteRun = runSuite("sqlite", firstEnv, targets, log("sqlite"));
      const [sqlite, postgres] = await Promise.all([
        sqliteRun,
        runSuite("postgres", { CONFORMANCE_DATABASE_URL: url }, targets, log("postgres"), sqliteRun),
      ]);
      runs.push({ label: "sqlite", results: sqlite, targets: serviceTargets("sqlite") });
      runs.push({ label: "postgres", results: postgres, targets: serviceTargets("postgres") });
    } finally {
      pg?.stop();
    }
  }

  const clauses = readClauses();
  const reportRuns: ReportRun[] = runs.map((r) => ({ label: r.label, kind: "conformance", results: r.results }));
  let projectNote: string;
  let projectNotRun: ListedTest[] | undefined;
  let project: { generatedAt?: string; results: TestResult[] } | undefined;
  if (projectTestsFile) {
    const read = readProjectTests(resolve(projectTestsFile));
    if ("error" in read) projectNote = `project tests: not counted (${read.error})`;
    else {
      project = read;
      reportRuns.push({ label: PROJECT, kind: "project", results: read.results });
      projectNote = `project tests: ${projectTestsFile}${read.generatedAt ? ` (${read.generatedAt})` : ""}, counted as the run "${PROJECT}"`;
    }
  } else ({ tests: projectNotRun, note: projectNote } = listProjectTests());
  const rows: ClauseRow[] = clauseRows(clauses, reportRuns, projectNotRun);
  const seedIds = new Set(clauses.map((c) => c.id));
  // Only a complete in-process run can be asked to prove every clause: a file subset proves a part,
  // and a deployment skips the tests that need the in-process clock or client address.
  const clauseFailures = files.length || external ? [] : clauseGate(rows, seedIds);
  const report = clauseText(rows);

  const isSkip = (t: TestResult) => t.status !== "passed" && t.status !== "failed" && t.status !== NOT_RUN;
  const tests = runs.map((r) => ({
    label: r.label,
    passed: r.results.filter((t) => t.status === "passed").length,
    failed: r.results.filter((t) => t.status === "failed").length,
    skipped: r.results.filter(isSkip).length,
    // Tests of files that could not start: each file is also one failure, "(did not run) <file>: <why>".
    notRun: r.results.filter((t) => t.status === NOT_RUN).length,
  }));
  const perTest = runs.flatMap((r) =>
    r.results.map((t) => ({
      run: r.label,
      target: targetOf(r.targets, t.file),
      file: t.file,
      title: t.title,
      status: t.status,
      ...(t.skipReason ? { skipReason: t.skipReason } : {}),
      ...(t.reason ? { reason: t.reason } : {}),
      ...(t.failure ? { failure: firstLineOf(t.failure) } : {}),
    })),
  );
  writeFileSync(
    join(reportDir, "conformance-report.json"),
    JSON.stringify(
      {
        generatedAt: new Date().toISOString(),
        runs: tests.map((t, i) => ({ ...t, targets: runs[i]!.targets })),
        projectTests: project
          ? {
              ran: true,
              source: projectTestsFile,
              generatedAt: project.generatedAt,
              passed: project.results.filter((t) => t.status === "passed").length,
              failed: project.results.filter((t) => t.status === "failed").length,
            }
          : { ran: false, note: projectNote },
        clauses: rows,
        clauseFailures,
        tests: perTest,
      },
      null,
      2,
    ) + "\n",
  );
  writeFileSync(
    join(reportDir, "conformance-report.junit.xml"),
    junitXml(runs.map((r) => ({ label: r.label, results: r.results, targetOf: (file) => targetOf(r.targets, file) }))),
  );

  const where = runs.map((r) => `${r.label}: ${SERVICES.map((s) => `${s} ${r.targets[s]}`).join("; ")}`);
  const skipped = runs.flatMap((r) =>
    r.results.filter(isSkip).map((t) => `  ${r.label}  ${t.file}  ${t.title.slice(0, 70)}: ${t.skipReason ?? t.status}`),
  );
  const notRun = runs.flatMap((r) =>
    r.results.filter((t) => t.status === NOT_RUN).map((t) => `  ${r.label}  ${t.file}  ${t.title.slice(0, 70)}: not run: ${t.reason}`),
  );
  const head = [
    "targets",
    ...where.map((w) => `  ${w}`),
    `  ${projectNote}`,
    "",
    ...report.table,
    "",
    ...report.summary,
    ...tests.map(
      (t) => `${t.label}: ${t.passed} tests passed, ${t.failed} failed, ${t.skipped} skipped${t.notRun ? `, ${t.notRun} not run` : ""}`,
    ),
    ...(report.notRun.length
      ? ["", "clauses that rest only on project tests that did not run (npm test runs them)", ...report.notRun]
      : []),
    ...(clauseFailures.length ? ["", "clauses with no passing test (fail the run)", ...clauseFailures.map((f) => `  ${f}`)] : []),
    ...(notRun.length ? ["", "not run: their file could not start (each such file fails the run)", ...notRun] : []),
    ...(skipped.length ? ["", "skipped (not counted as passed)", ...skipped] : []),
  ];
  const text = [...head, "", "tests naming each clause (file, title, result per run)", ...report.testsByClause].join("\n") + "\n";
  writeFileSync(join(reportDir, "conformance-report.txt"), text);
  console.log(
    `\n=== clause report (conformance-report.txt, conformance-report.json, conformance-report.junit.xml; the tests naming each clause are in the files) ===\n${head.join("\n")}\n`,
  );

  // Contract coverage of each run, against whatever documents generated/openapi/ holds now.
  const declared = currentDeclaredResponses();
  const allowList = loadAllowList();
  const scope = (label: string): RunScope => (label === "deployment" ? "deployment" : files.length ? "partial" : "full");
  const coverage: RunCoverage[] = runs.map((r) =>
    computeCoverage(r.label, scope(r.label), declared, readObservations(observationsDir(r.label)), allowList),
  );
  const mocks = mockCoverage(declared, readMockRecord());
  const gate = coverage.flatMap(gateFailures);
  for (const r of runs) rmSync(observationsDir(r.label), { recursive: true, force: true });
  writeFileSync(
    join(reportDir, "contract-coverage.json"),
    JSON.stringify({ generatedAt: new Date().toISOString(), runs: coverage, mocks, gate }, null, 2) + "\n",
  );
  const coverageReport = coverageText(coverage, mocks);
  writeFileSync(join(reportDir, "contract-coverage.txt"), coverageReport);
  console.log(`\n=== contract coverage (contract-coverage.txt, contract-coverage.json) ===\n${coverageReport}`);
  if (gate.length) console.error(`contract coverage gate: ${gate.length} failure(s)\n${gate.map((g) => `  - ${g}`).join("\n")}`);
  else console.log("contract coverage gate: passed");

  const passed = tests.reduce((n, t) => n + t.passed, 0);
  const failed = tests.reduce((n, t) => n + t.failed, 0);
  const skippedCount = tests.reduce((n, t) => n + t.skipped, 0);
  const notRunCount = tests.reduce((n, t) => n + t.notRun, 0);
  console.log(
    `conformance: ${passed} passed, ${failed} failed, ${skippedCount} skipped${notRunCount ? `, ${notRunCount} not run` : ""} (node ${process.version})`,
  );
  if (clauseFailures.length) console.error(`clause gate: ${clauseFailures.length} seed clause(s) with no passing test`);
  process.exitCode = failed > 0 || passed === 0 || gate.length > 0 || clauseFailures.length > 0 ? 1 : 0;
}

await main();
