/**
 * The clause table of scripts/conformance.ts, from test titles alone (no I/O here, so
 * test/tooling/clause-report.test.ts drives it with made-up results).
 *
 * A test names a clause by putting its ID anywhere in its own title (not its describe block's):
 * a seed clause ID (ID-…, RB-…, EM-…) or a project decision (X-…). Titles of conformance/ and of
 * test/ count alike, so a clause whose real proof is a project test (ID-APP-1's dashboard test
 * in Chromium) is shown resting on it. Each clause lists the tests that name it and the run each
 * result came from: a conformance run (sqlite, postgres, deployment) or the project tests.
 *
 * When the project tests did not run (`npm run conformance` alone, as QA runs it against a
 * deployment), the titles they would have run (from `vitest list`) still say which clauses they
 * name: a clause with no passing conformance test that a project test names is "not run", and the
 * report lists those clauses rather than calling them uncovered or passed.
 */
import type { TestResult } from "./vitest-runner.ts";

export interface Clause {
  id: string;
  behaviour: string;
}

/** One run's results: a conformance run (labelled by its target) or the project tests (test/). */
export interface ReportRun {
  label: string;
  kind: "conformance" | "project";
  results: TestResult[];
}

/** A project test known by title only: it exists in test/ but did not run here. */
export interface ListedTest {
  file: string;
  title: string;
}

/** A run's verdict on a clause; "not run" when only tests that did not run name it. */
export type ClauseStatus = "passed" | "failed" | "not covered" | "not run";

export interface ClauseTest {
  /** The run's label, or "project (not run)" for a listed project test. */
  run: string;
  file: string;
  title: string;
  status: string;
}

export interface ClauseRow {
  id: string;
  behaviour: string;
  /** The clause's status in each run, by label (and "project" when project tests are known). */
  results: Record<string, ClauseStatus>;
  /** Failed if any run failed it, passed if any passed it, not run if only unrun tests name it. */
  verdict: ClauseStatus;
  tests: ClauseTest[];
}

export const PROJECT = "project";
export const PROJECT_NOT_RUN = "project (not run)";
const PROJECT_DECISION = "project decision (documented in spec/ or, for the CLI and mocks, docs/cli.md and docs/contributing.md)";

/** Any ID-shaped word; kept only when it is a seed clause or an X- decision (SHA-256, UTF-8 and P-256 are neither). */
const ID_SHAPE = /(?<![\w-])((?:X-)?[A-Z]+(?:-[A-Z]+)*-\d+)(?![\w-])/g;

/** Every clause ID a title names, in order, once each. */
export function clauseIdsIn(title: string, seedIds: ReadonlySet<string>): string[] {
  const ids = [...title.matchAll(ID_SHAPE)].map((m) => m[1]!).filter((id) => id.startsWith("X-") || seedIds.has(id));
  return [...new Set(ids)];
}

const counted = (status: string) => status === "passed" || status === "failed";

/**
 * The status of one run's tests that name a clause: any failure fails it; then a test that did not
 * run because its file could not start (status "not run") makes it "not run", not passed, since
 * part of its proof is missing, nor "not covered", since a test names it; skipped tests do not count.
 */
function statusOf(statuses: string[]): ClauseStatus {
  const ran = statuses.filter(counted);
  if (ran.includes("failed")) return "failed";
  if (statuses.includes("not run")) return "not run";
  return ran.length ? "passed" : "not covered";
}

export function clauseRows(clauses: Clause[], runs: ReportRun[], projectNotRun?: ListedTest[]): ClauseRow[] {
  const seedIds = new Set(clauses.map((c) => c.id));
  const tests = new Map<string, ClauseTest[]>();
  const add = (id: string, t: ClauseTest) => tests.set(id, [...(tests.get(id) ?? []), t]);
  for (const run of runs)
    for (const r of run.results)
      for (const id of clauseIdsIn(r.title, seedIds)) add(id, { run: run.label, file: r.file, title: r.title, status: r.status });
  for (const t of projectNotRun ?? [])
    for (const id of clauseIdsIn(t.title, seedIds)) add(id, { run: PROJECT_NOT_RUN, file: t.file, title: t.title, status: "not run" });

  const decisions = [...tests.keys()]
    .filter((id) => id.startsWith("X-") && !seedIds.has(id))
    .sort((a, b) => a.localeCompare(b, "en", { numeric: true }));
  const labels = runs.map((r) => r.label);
  const projectRan = runs.some((r) => r.kind === "project");
  return [...clauses, ...decisions.map((id) => ({ id, behaviour: PROJECT_DECISION }))].map(({ id, behaviour }) => {
    const named = tests.get(id) ?? [];
    const results: Record<string, ClauseStatus> = {};
    for (const label of labels) results[label] = statusOf(named.filter((t) => t.run === label).map((t) => t.status));
    if (!projectRan && projectNotRun) results[PROJECT] = named.some((t) => t.run === PROJECT_NOT_RUN) ? "not run" : "not covered";
    const all = Object.values(results);
    const verdict: ClauseStatus = all.includes("failed")
      ? "failed"
      : all.includes("passed")
        ? "passed"
        : all.includes("not run")
          ? "not run"
          : "not covered";
    return { id, behaviour, results, verdict, tests: named };
  });
}

/**
 * Why a complete run fails on its clauses: a seed clause that no passing test names (conformance or
 * project). Clauses resting on project tests that did not run are the caller's to report, not failures.
 */
export function clauseGate(rows: ClauseRow[], seedIds: ReadonlySet<string>): string[] {
  return rows
    .filter((r) => seedIds.has(r.id) && (r.verdict === "failed" || r.verdict === "not covered"))
    .map((r) => `${r.id} has no passing test (${r.verdict})`);
}

/** Clauses no passing test of this run proves, that project tests which did not run name. */
export function restingOnUnrunProjectTests(rows: ClauseRow[]): ClauseRow[] {
  return rows.filter((r) => r.verdict === "not run" && r.tests.some((t) => t.run === PROJECT_NOT_RUN));
}

/** The text report's table, summary and the tests naming each clause. */
export function clauseText(rows: ClauseRow[]): { table: string[]; summary: string[]; testsByClause: string[]; notRun: string[] } {
  const labels = Object.keys(rows[0]?.results ?? {});
  const table = [`${"clause".padEnd(12)} ${[...labels, "verdict"].map((l) => l.padEnd(12)).join(" ")} behaviour`];
  for (const row of rows)
    table.push(
      `${row.id.padEnd(12)} ${[...labels.map((l) => row.results[l]!), row.verdict].map((s) => s.padEnd(12)).join(" ")} ${row.behaviour.slice(0, 90)}`,
    );
  const summary = [...labels, "verdict"].map((l) => {
    const counts: Record<ClauseStatus, number> = { passed: 0, failed: 0, "not covered": 0, "not run": 0 };
    for (const row of rows) counts[l === "verdict" ? row.verdict : row.results[l]!]++;
    const notRun = counts["not run"] ? `, ${counts["not run"]} named only by tests that did not run` : "";
    return `${l}: ${counts.passed} clauses passed, ${counts.failed} failed, ${counts["not covered"]} not covered${notRun}`;
  });
  const testsByClause: string[] = [];
  for (const row of rows) {
    testsByClause.push(`${row.id}${row.tests.length ? "" : "  (no test names it)"}`);
    // One line per test, with its result in each run that ran it.
    const byTest = new Map<string, string[]>();
    for (const t of row.tests) {
      const key = `${t.file}  ${t.title}`;
      byTest.set(key, [...(byTest.get(key) ?? []), t.run === PROJECT_NOT_RUN ? t.run : `${t.run} ${t.status}`]);
    }
    for (const [test, results] of byTest) testsByClause.push(`  ${test}  [${results.join(", ")}]`);
  }
  const notRun = restingOnUnrunProjectTests(rows).map((r) => {
    const files = [...new Set(r.tests.filter((t) => t.run === PROJECT_NOT_RUN).map((t) => t.file))];
    return `  ${r.id}: ${files.join(", ")}`;
  });
  return { table, summary, testsByClause, notRun };
}
