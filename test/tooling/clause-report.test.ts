/**
 * The clause report (scripts/clause-report.ts, written by scripts/conformance.ts) counts every clause
 * ID in a test's own title, from conformance/ and test/ alike. First its logic on made-up results;
 * then scripts/conformance.ts itself in a temporary copy of the runner files, with one fixture test
 * in conformance/ and one in test/, with and without npm test's project-tests summary.
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runnerCopy } from "./runner-copy.ts";
import { clauseGate, clauseIdsIn, clauseRows, clauseText, type ReportRun } from "../../scripts/clause-report.ts";

const clauses = [
  { id: "ID-APP-1", behaviour: "applications are editable in the dashboard" },
  { id: "ID-TOK-4", behaviour: "wrong client_secret is invalid_client" },
  { id: "ID-TOK-9", behaviour: "token errors are JSON" },
  { id: "EM-5", behaviour: "deliveries are signed" },
];
const seeds = new Set(clauses.map((c) => c.id));
const conformance = (label: string, results: ReportRun["results"]): ReportRun => ({ label, kind: "conformance", results });
const project = (results: ReportRun["results"]): ReportRun => ({ label: "project", kind: "project", results });
const row = (rows: ReturnType<typeof clauseRows>, id: string) => rows.find((r) => r.id === id)!;

describe("clause IDs in a title", () => {
  it("every seed clause ID and X- decision anywhere in the title counts, once", () => {
    expect(clauseIdsIn("ID-TOK-4 a wrong secret is invalid_client, as JSON (ID-TOK-9, X-ID-TOK-2, ID-TOK-4)", seeds)).toEqual([
      "ID-TOK-4",
      "ID-TOK-9",
      "X-ID-TOK-2",
    ]);
  });

  it("ID-shaped words that are no clause do not count: SHA-256, UTF-8, P-256, an unknown ID-FOO-1, a longer word", () => {
    expect(clauseIdsIn("SHA-256 of UTF-8 text signed with P-256; ID-FOO-1 and ID-TOK-44 and XID-TOK-4 are no clauses", seeds)).toEqual([]);
  });
});

describe("clause rows from conformance and project runs", () => {
  it("a clause named only by a project test is covered by it, and the row lists that test with its run", () => {
    const rows = clauseRows(clauses, [
      conformance("sqlite", [{ file: "conformance/identity/token.test.ts", title: "ID-TOK-4 wrong secret", status: "passed" }]),
      project([{ file: "test/identity/dashboard-browser.test.ts", title: "ID-APP-1 edits branding in Chromium", status: "passed" }]),
    ]);
    const app = row(rows, "ID-APP-1");
    expect(app.results).toEqual({ sqlite: "not covered", project: "passed" });
    expect(app.verdict).toBe("passed");
    expect(app.tests).toEqual([
      { run: "project", file: "test/identity/dashboard-browser.test.ts", title: "ID-APP-1 edits branding in Chromium", status: "passed" },
    ]);
    expect(row(rows, "ID-TOK-4").verdict).toBe("passed");
    expect(clauseGate(rows, seeds)).toEqual(["ID-TOK-9 has no passing test (not covered)", "EM-5 has no passing test (not covered)"]);
  });

  it("a failed test in any run fails the clause; skipped tests prove nothing", () => {
    const rows = clauseRows(clauses, [
      conformance("sqlite", [
        { file: "c.test.ts", title: "ID-TOK-4 passes here", status: "passed" },
        { file: "c.test.ts", title: "EM-5 needs the clock", status: "skipped" },
      ]),
      conformance("postgres", [{ file: "c.test.ts", title: "ID-TOK-4 passes here", status: "failed" }]),
      project([{ file: "test/t.test.ts", title: "ID-APP-1 and ID-TOK-9 together", status: "failed" }]),
    ]);
    expect(row(rows, "ID-TOK-4").results).toEqual({ sqlite: "passed", postgres: "failed", project: "not covered" });
    expect(row(rows, "ID-TOK-4").verdict).toBe("failed");
    expect(row(rows, "ID-TOK-9").verdict).toBe("failed");
    expect(row(rows, "EM-5").verdict).toBe("not covered");
    expect(clauseGate(rows, seeds)).toEqual([
      "ID-APP-1 has no passing test (failed)",
      "ID-TOK-4 has no passing test (failed)",
      "ID-TOK-9 has no passing test (failed)",
      "EM-5 has no passing test (not covered)",
    ]);
  });

  it("X- decisions named by either run get rows of their own after the seed clauses", () => {
    const rows = clauseRows(clauses, [
      conformance("sqlite", [{ file: "c.test.ts", title: "X-ID-TOK-2 a decision", status: "passed" }]),
      project([{ file: "test/mocks/examples.test.ts", title: "X-MOCK-1 the mock answers", status: "passed" }]),
    ]);
    expect(rows.map((r) => r.id)).toEqual(["ID-APP-1", "ID-TOK-4", "ID-TOK-9", "EM-5", "X-ID-TOK-2", "X-MOCK-1"]);
    expect(row(rows, "X-MOCK-1").results).toEqual({ sqlite: "not covered", project: "passed" });
  });

  it("project tests that did not run: a clause only they name is 'not run', listed, and not a gate failure", () => {
    const rows = clauseRows(
      clauses,
      [conformance("deployment", [{ file: "c.test.ts", title: "ID-TOK-4 and ID-TOK-9", status: "passed" }])],
      [
        { file: "test/identity/dashboard-browser.test.ts", title: "ID-APP-1 edits branding in Chromium" },
        { file: "test/token.test.ts", title: "ID-TOK-4 also here" },
      ],
    );
    const app = row(rows, "ID-APP-1");
    expect(app.results).toEqual({ deployment: "not covered", project: "not run" });
    expect(app.verdict).toBe("not run");
    expect(row(rows, "ID-TOK-4").verdict).toBe("passed");
    expect(clauseGate(rows, seeds)).toEqual(["EM-5 has no passing test (not covered)"]);
    const text = clauseText(rows);
    expect(text.notRun).toEqual(["  ID-APP-1: test/identity/dashboard-browser.test.ts"]);
    expect(text.summary.at(-1)).toBe("verdict: 2 clauses passed, 0 failed, 1 not covered, 1 named only by tests that did not run");
    expect(text.testsByClause).toContain("  test/token.test.ts  ID-TOK-4 also here  [project (not run)]");
    expect(text.testsByClause).toContain("  c.test.ts  ID-TOK-4 and ID-TOK-9  [deployment passed]");
    expect(text.testsByClause).toContain("EM-5  (no test names it)");
  });

  it("a test whose file could not start ('not run'): its clause is 'not run' in that run, never 'not covered' or passed", () => {
    const rows = clauseRows(clauses, [
      conformance("deployment", [
        { file: "pkce.test.ts", title: "ID-TOK-4 never started", status: "not run", reason: "429 Too many registrations" },
        { file: "token.test.ts", title: "ID-TOK-4 passes elsewhere", status: "passed" },
        { file: "pkce.test.ts", title: "EM-5 never started either", status: "not run", reason: "429 Too many registrations" },
      ]),
    ]);
    expect(row(rows, "EM-5").results).toEqual({ deployment: "not run" });
    expect(row(rows, "EM-5").verdict).toBe("not run");
    expect(row(rows, "ID-TOK-4").results).toEqual({ deployment: "not run" });
    // Not a clause resting on project tests that did not run: the run itself fails on the file.
    expect(clauseText(rows).notRun).toEqual([]);
    expect(clauseText(rows).testsByClause).toContain("  pkce.test.ts  EM-5 never started either  [deployment not run]");
  });
});

describe("scripts/conformance.ts counts test/ titles", () => {
  let copy: ReturnType<typeof runnerCopy>;
  const run = (args: string[]) => copy.run(args);
  type Report = {
    clauses: Array<{ id: string; verdict: string; results: Record<string, string>; tests: Array<{ run: string; file: string }> }>;
    clauseFailures: string[];
    projectTests: { ran: boolean };
  };
  const report = () => JSON.parse(readFileSync(join(copy.dir, "conformance-report.json"), "utf8")) as Report;

  beforeAll(() => {
    copy = runnerCopy("clause-report-");
    mkdirSync(join(copy.dir, "conformance/fixture"), { recursive: true });
    mkdirSync(join(copy.dir, "test"));
    writeFileSync(
      join(copy.dir, "conformance/fixture/token.test.ts"),
      `import { test, expect } from "vitest";\ntest("ID-TOK-4 and ID-TOK-9 pass", () => expect(1).toBe(1));\n`,
    );
    writeFileSync(
      join(copy.dir, "test/dashboard.test.ts"),
      `import { test, expect, describe } from "vitest";\ndescribe("the dashboard", () => test("ID-APP-1 edits an application", () => expect(1).toBe(1)));\n`,
    );
  });
  afterAll(() => copy?.remove());

  it("without the project tests: a clause only test/ names rests on tests that did not run, and the report says so", () => {
    const { output } = run(["scripts/conformance.ts", "conformance/fixture"]);
    const r = report();
    expect(r.projectTests.ran).toBe(false);
    const app = r.clauses.find((c) => c.id === "ID-APP-1")!;
    expect(app.verdict).toBe("not run");
    expect(app.tests).toEqual([expect.objectContaining({ run: "project (not run)", file: "test/dashboard.test.ts" })]);
    expect(r.clauses.find((c) => c.id === "ID-TOK-9")!.verdict).toBe("passed");
    expect(output).toMatch(/clauses that rest only on project tests that did not run[^\n]*\n {2}ID-APP-1: test\/dashboard\.test\.ts/);
    expect(r.clauseFailures).toEqual([]); // a file subset is not asked to prove every clause
  });

  it("with npm test's project-tests summary: the project test covers the clause", () => {
    expect(run(["scripts/vitest-runner.ts", ".tmp/project-tests.json", "test/"]).status).toBe(0);
    run(["scripts/conformance.ts", "conformance/fixture", "--project-tests=.tmp/project-tests.json"]);
    const r = report();
    expect(r.projectTests.ran).toBe(true);
    const app = r.clauses.find((c) => c.id === "ID-APP-1")!;
    expect(app.results).toEqual({ sqlite: "not covered", project: "passed" });
    expect(app.verdict).toBe("passed");
    expect(readFileSync(join(copy.dir, "conformance-report.txt"), "utf8")).toContain(
      "  test/dashboard.test.ts  ID-APP-1 edits an application  [project passed]",
    );
  });

  it("a complete run fails when a seed clause has no passing test", () => {
    const { status, output } = run(["scripts/conformance.ts", "--project-tests=.tmp/project-tests.json"]);
    expect(status).not.toBe(0);
    expect(output).toMatch(/clause gate: \d+ seed clause\(s\) with no passing test/);
    const failures = report().clauseFailures;
    expect(failures).toContain("ID-AZ-1 has no passing test (not covered)");
    expect(failures.join("\n")).not.toMatch(/ID-APP-1|ID-TOK-4|ID-TOK-9/);
  });
});
