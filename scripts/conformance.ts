/**
 * Runs the conformance suite and writes the clause report.
 *
 *   npm run conformance                 SQLite (services started by the suite)
 *   npm run conformance -- --postgres   SQLite, then PostgreSQL (a throwaway cluster from
 *                                        scripts/postgres.sh, or CONFORMANCE_DATABASE_URL)
 *   CONFORMANCE_IDENTITY_URL=… npm run conformance     against a deployment (see README: each
 *                                                      service's URL and credentials)
 *
 * The report lists every clause of the seeds (../shared/conformance-clauses.md, or the copy in
 * conformance/clauses.md) and every project decision (X-…) named by a test: passed, failed or
 * not covered, per run, and where each run's services were (in-process SQLite or PostgreSQL, or a
 * deployment's URL, per service: services without a CONFORMANCE_<SERVICE>_URL still run in-process).
 * Tests that cannot run against a deployment are skipped with their reason, never counted as
 * passed. Written to conformance-report.txt, conformance-report.json (every test with its target)
 * and conformance-report.junit.xml (JUnit, for CI systems), in the project folder or
 * CONFORMANCE_REPORT_DIR.
 *
 * Beside it, the contract coverage (scripts/contract-coverage.ts): every answer of every run is
 * recorded and checked against its document (conformance/harness/contract/), and
 * contract-coverage.txt/.json say which declared responses each run produced, which have a reason
 * in conformance/contract-coverage-allowlist.yaml, and which were never produced. Its gate fails
 * the run like a failed test.
 */
import { execFileSync } from "node:child_process";
import { runVitest, type TestResult } from "./vitest-runner.ts";
import { junitXml } from "./junit.ts";
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
import { existsSync, readFileSync, writeFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
/** Where the reports go: the project folder, or CONFORMANCE_REPORT_DIR (CI artefacts; runs side by side). */
const reportDir = resolve(process.env.CONFORMANCE_REPORT_DIR ?? root);
type Status = "passed" | "failed" | "not covered";

interface Clause {
  id: string;
  behaviour: string;
}

export function readClauses(): Clause[] {
  const shared = join(root, "../shared/conformance-clauses.md");
  const text = readFileSync(existsSync(shared) ? shared : join(root, "conformance/clauses.md"), "utf8");
  return [...text.matchAll(/^\| ([A-Z]+(?:-[A-Z]+)*-\d+) \| (.+) \|$/gm)].map((m) => ({ id: m[1]!, behaviour: m[2]! }));
}

const CLAUSE_IN_TITLE = /^((?:X-)?[A-Z]+(?:-[A-Z]+)*-\d+)\b/;

/**
 * Where the workers of a run write what they observed (conformance/harness/contract/recorder.ts):
 * one folder per run of this process, so runs side by side (other checkouts' helpers, CI jobs)
 * never mix or delete each other's records. Removed once the report is written.
 */
const observationsDir = (label: string) => join(root, ".tmp/contract-coverage", `${label}-${process.pid}`);

function runSuite(label: string, env: Record<string, string>, files: string[]): TestResult[] {
  console.log(`\n=== conformance on ${label} ===`);
  rmSync(observationsDir(label), { recursive: true, force: true });
  const run = runVitest({
    root,
    outFile: join(reportDir === root ? join(root, ".tmp") : reportDir, `vitest-${label}.json`),
    args: files,
    env: { ...env, CONTRACT_COVERAGE_DIR: observationsDir(label) },
  });
  if (run.problems.length)
    console.error(
      `\nThese did not run as they should on ${label} (each counts as a failure):\n${run.problems.map((p) => `  - ${p}`).join("\n")}`,
    );
  // Each problem is a failure of its own, so a crashed file can never hide behind "0 failed".
  return [...run.results, ...run.problems.map((p) => ({ title: `(did not run) ${p}`, status: "failed", file: p.split(":")[0]! }))];
}

function clauseStatuses(results: TestResult[]): Map<string, Status> {
  const map = new Map<string, Status>();
  for (const r of results) {
    const id = CLAUSE_IN_TITLE.exec(r.title)?.[1];
    if (!id || r.status === "skipped" || r.status === "pending" || r.status === "todo") continue;
    if (r.status === "failed") map.set(id, "failed");
    else if (map.get(id) !== "failed") map.set(id, "passed");
  }
  return map;
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
  const targets = files.length ? files : ["conformance"];
  const external = Object.keys(process.env).some((k) => /^CONFORMANCE_[A-Z]+_URL$/.test(k));
  const runs: Array<{ label: string; results: TestResult[]; targets: Record<string, string> }> = [];

  // Without --postgres, in-process services use SQLite unless CONFORMANCE_DATABASE_URL says otherwise.
  const firstStorage = process.env.CONFORMANCE_DATABASE_URL ? "postgres" : "sqlite";
  const firstLabel = external ? "deployment" : firstStorage;
  runs.push({ label: firstLabel, results: runSuite(firstLabel, {}, targets), targets: serviceTargets(firstStorage) });
  if (args.includes("--postgres") && !external) {
    let pg: { url: string; stop(): void } | undefined;
    const url = process.env.CONFORMANCE_DATABASE_URL ?? (pg = startPostgres()).url;
    try {
      runs.push({
        label: "postgres",
        results: runSuite("postgres", { CONFORMANCE_DATABASE_URL: url }, targets),
        targets: serviceTargets("postgres"),
      });
    } finally {
      pg?.stop();
    }
  }

  const clauses = readClauses();
  const perRun = runs.map((r) => ({ label: r.label, statuses: clauseStatuses(r.results) }));
  const projectIds = [...new Set(perRun.flatMap((r) => [...r.statuses.keys()]).filter((id) => id.startsWith("X-")))].sort();
  const rows = [
    ...clauses.map((c) => ({ id: c.id, behaviour: c.behaviour })),
    ...projectIds.map((id) => ({ id, behaviour: "project decision (documented in spec/ or, for the CLI and mocks, the README)" })),
  ].map((row) => ({
    ...row,
    results: Object.fromEntries(perRun.map((r) => [r.label, r.statuses.get(row.id) ?? ("not covered" as Status)])),
  }));

  const tests = runs.map((r) => ({
    label: r.label,
    passed: r.results.filter((t) => t.status === "passed").length,
    failed: r.results.filter((t) => t.status === "failed").length,
    skipped: r.results.filter((t) => t.status !== "passed" && t.status !== "failed").length,
  }));
  const perTest = runs.flatMap((r) =>
    r.results.map((t) => ({
      run: r.label,
      target: targetOf(r.targets, t.file),
      file: t.file,
      title: t.title,
      status: t.status,
      ...(t.skipReason ? { skipReason: t.skipReason } : {}),
    })),
  );
  writeFileSync(
    join(reportDir, "conformance-report.json"),
    JSON.stringify(
      {
        generatedAt: new Date().toISOString(),
        runs: tests.map((t, i) => ({ ...t, targets: runs[i]!.targets })),
        clauses: rows,
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

  const labels = perRun.map((r) => r.label);
  const lines = [`${"clause".padEnd(12)} ${labels.map((l) => l.padEnd(12)).join(" ")} behaviour`];
  for (const row of rows)
    lines.push(`${row.id.padEnd(12)} ${labels.map((l) => String(row.results[l]).padEnd(12)).join(" ")} ${row.behaviour.slice(0, 90)}`);
  const summary = labels.map((l) => {
    const counts = { passed: 0, failed: 0, "not covered": 0 };
    for (const row of rows) counts[row.results[l] as Status]++;
    return `${l}: ${counts.passed} clauses passed, ${counts.failed} failed, ${counts["not covered"]} not covered`;
  });
  const where = runs.map((r) => `${r.label}: ${SERVICES.map((s) => `${s} ${r.targets[s]}`).join("; ")}`);
  const skipped = runs.flatMap((r) =>
    r.results
      .filter((t) => t.status !== "passed" && t.status !== "failed")
      .map((t) => `  ${r.label}  ${t.file}  ${t.title.slice(0, 70)}: ${t.skipReason ?? t.status}`),
  );
  const text =
    [
      "targets",
      ...where.map((w) => `  ${w}`),
      "",
      ...lines,
      "",
      ...summary,
      ...tests.map((t) => `${t.label}: ${t.passed} tests passed, ${t.failed} failed, ${t.skipped} skipped`),
      ...(skipped.length ? ["", "skipped (not counted as passed)", ...skipped] : []),
    ].join("\n") + "\n";
  writeFileSync(join(reportDir, "conformance-report.txt"), text);
  console.log(`\n=== clause report (conformance-report.txt, conformance-report.json, conformance-report.junit.xml) ===\n${text}`);

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
  console.log(`conformance: ${passed} passed, ${failed} failed, ${skippedCount} skipped (node ${process.version})`);
  process.exitCode = failed > 0 || passed === 0 || gate.length > 0 ? 1 : 0;
}

await main();
