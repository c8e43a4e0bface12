/**
 * Runs the conformance suite and writes the clause report.
 *
 *   npm run conformance                 SQLite (services started by the suite)
 *   npm run conformance -- --postgres   SQLite, then PostgreSQL (a throwaway cluster from
 *                                        scripts/postgres.sh, or CONFORMANCE_DATABASE_URL)
 *   CONFORMANCE_REPOSITORY_URL=… npm run conformance   against a deployment (see README)
 *
 * The report lists every clause of the seeds (../shared/conformance-clauses.md, or the copy in
 * conformance/clauses.md) and every project decision (X-…) named by a test: passed, failed or
 * not covered, per storage. Written to conformance-report.json and conformance-report.txt.
 */
import { execFileSync } from "node:child_process";
import { runVitest, type TestResult } from "./vitest-runner.ts";
import { existsSync, readFileSync, writeFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
type Status = "passed" | "failed" | "not covered";

interface Clause { id: string; behaviour: string }

export function readClauses(): Clause[] {
  const shared = join(root, "../shared/conformance-clauses.md");
  const text = readFileSync(existsSync(shared) ? shared : join(root, "conformance/clauses.md"), "utf8");
  return [...text.matchAll(/^\| ([A-Z]+(?:-[A-Z]+)*-\d+) \| (.+) \|$/gm)].map((m) => ({ id: m[1]!, behaviour: m[2]! }));
}

const CLAUSE_IN_TITLE = /^((?:X-)?[A-Z]+(?:-[A-Z]+)*-\d+)\b/;

function runSuite(label: string, env: Record<string, string>, files: string[]): TestResult[] {
  console.log(`\n=== conformance on ${label} ===`);
  const run = runVitest({ root, outFile: join(root, ".tmp", `vitest-${label}.json`), args: files, env });
  if (run.problems.length) console.error(`\nThese did not run as they should on ${label} (each counts as a failure):\n${run.problems.map((p) => `  - ${p}`).join("\n")}`);
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
  const url = execFileSync("bash", [join(root, "scripts/postgres.sh"), "start", dir], { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] }).trim();
  return {
    url,
    stop: () => {
      execFileSync("bash", [join(root, "scripts/postgres.sh"), "stop", dir], { stdio: "inherit" });
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const files = args.filter((a) => !a.startsWith("--"));
  const targets = files.length ? files : ["conformance"];
  const external = Object.keys(process.env).some((k) => /^CONFORMANCE_[A-Z]+_URL$/.test(k));
  const runs: Array<{ label: string; results: TestResult[] }> = [];

  runs.push({ label: external ? "external" : "sqlite", results: runSuite(external ? "external" : "sqlite", {}, targets) });
  if (args.includes("--postgres") && !external) {
    let pg: { url: string; stop(): void } | undefined;
    const url = process.env.CONFORMANCE_DATABASE_URL ?? (pg = startPostgres()).url;
    try {
      runs.push({ label: "postgres", results: runSuite("postgres", { CONFORMANCE_DATABASE_URL: url }, targets) });
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
  ].map((row) => ({ ...row, results: Object.fromEntries(perRun.map((r) => [r.label, r.statuses.get(row.id) ?? ("not covered" as Status)])) }));

  const tests = runs.map((r) => ({
    label: r.label,
    passed: r.results.filter((t) => t.status === "passed").length,
    failed: r.results.filter((t) => t.status === "failed").length,
    skipped: r.results.filter((t) => t.status !== "passed" && t.status !== "failed").length,
  }));
  writeFileSync(join(root, "conformance-report.json"), JSON.stringify({ generatedAt: new Date().toISOString(), runs: tests, clauses: rows }, null, 2) + "\n");

  const labels = perRun.map((r) => r.label);
  const lines = [`${"clause".padEnd(12)} ${labels.map((l) => l.padEnd(12)).join(" ")} behaviour`];
  for (const row of rows) lines.push(`${row.id.padEnd(12)} ${labels.map((l) => String(row.results[l]).padEnd(12)).join(" ")} ${row.behaviour.slice(0, 90)}`);
  const summary = labels.map((l) => {
    const counts = { passed: 0, failed: 0, "not covered": 0 };
    for (const row of rows) counts[row.results[l] as Status]++;
    return `${l}: ${counts.passed} clauses passed, ${counts.failed} failed, ${counts["not covered"]} not covered`;
  });
  const text = [...lines, "", ...summary].join("\n") + "\n";
  writeFileSync(join(root, "conformance-report.txt"), text);
  console.log(`\n=== clause report (conformance-report.txt, conformance-report.json) ===\n${text}`);

  const passed = tests.reduce((n, t) => n + t.passed, 0);
  const failed = tests.reduce((n, t) => n + t.failed, 0);
  console.log(`conformance: ${passed} passed, ${failed} failed (node ${process.version})`);
  process.exitCode = failed > 0 || passed === 0 ? 1 : 0;
}

await main();
