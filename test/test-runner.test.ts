/**
 * The test runners fail on what they did not see finish. A temporary copy of the project's runner
 * configuration (vitest.config.ts, scripts/conformance.ts, scripts/vitest-runner.ts, scripts/junit.ts, scripts/clause-report.ts, the clause
 * list, and the contract coverage report's script, documents and allow-list) gets fixture test files that crash their worker, report no tests, or throw outside any
 * test, beside one that passes; both runners must exit non-zero and name each bad file.
 */
import { spawnSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, test } from "vitest";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");

const FIXTURES: Record<string, string> = {
  "passes.test.ts": `import { test, expect } from "vitest";\ntest("X-FIXTURE-1 passes", () => expect(1).toBe(1));\n`,
  // The worker dies mid-test, as better-sqlite3 12 did on Node 24 (an abort in native code).
  "crashes.test.ts": `import { test } from "vitest";\ntest("X-FIXTURE-2 crashes its worker", async () => { await new Promise((r) => setTimeout(r, 50)); process.abort(); });\n`,
  "no-tests.test.ts": `export const nothing = 1;\n`,
  "throws-later.test.ts": `import { test } from "vitest";\ntest("X-FIXTURE-3 leaves an error behind", () => { setTimeout(() => { throw new Error("thrown after the test"); }, 1); });\n`,
};

let copy: string;

function run(args: string[]) {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("VITEST")));
  const r = spawnSync(process.execPath, ["--import", "tsx", ...args], {
    cwd: copy,
    env: { ...env, NODE_ENV: "test" },
    encoding: "utf8",
    timeout: 60_000,
  });
  return { status: r.status, output: `${r.stdout}\n${r.stderr}` };
}

beforeAll(() => {
  copy = mkdtempSync(join(tmpdir(), "runner-copy-"));
  for (const f of [
    "vitest.config.ts",
    "package.json",
    "scripts/conformance.ts",
    "scripts/vitest-runner.ts",
    "scripts/junit.ts",
    "scripts/clause-report.ts",
    "conformance/clauses.md",
    "scripts/contract-coverage.ts",
    "conformance/harness/contract/documents.ts",
    "conformance/contract-coverage-allowlist.yaml",
    "generated/openapi",
  ]) {
    mkdirSync(dirname(join(copy, f)), { recursive: true });
    cpSync(join(root, f), join(copy, f), { recursive: true });
  }
  symlinkSync(join(root, "node_modules"), join(copy, "node_modules"));
  for (const dir of ["conformance/fixture", "test"]) {
    mkdirSync(join(copy, dir), { recursive: true });
    for (const [name, text] of Object.entries(FIXTURES)) writeFileSync(join(copy, dir, name), text);
  }
});

afterAll(() => rmSync(copy, { recursive: true, force: true }));

describe("a crashed, empty or erroring test file fails the run", () => {
  test("npm run conformance: exit non-zero, each bad file named, and counted as failures", () => {
    const { status, output } = run(["scripts/conformance.ts", "conformance/fixture"]);
    expect(status).not.toBe(0);
    expect(output).toMatch(/conformance\/fixture\/crashes\.test\.ts: did not run to completion/);
    expect(output).toMatch(/conformance\/fixture\/no-tests\.test\.ts: reports no tests/);
    expect(output).toMatch(/unhandled error/);
    const report = JSON.parse(readFileSync(join(copy, "conformance-report.json"), "utf8")) as { runs: Array<{ failed: number }> };
    expect(report.runs[0]!.failed).toBeGreaterThanOrEqual(2);
    expect(output).toMatch(/conformance: \d+ passed, [1-9]\d* failed/);
  });

  test("npm test's project-tests step: exit non-zero and the summary counts the bad files", () => {
    const { status, output } = run(["scripts/vitest-runner.ts", "summary.json", "test/"]);
    expect(status).not.toBe(0);
    expect(output).toMatch(/test\/crashes\.test\.ts: did not run to completion/);
    expect(output).toMatch(/test\/no-tests\.test\.ts: reports no tests/);
    const summary = JSON.parse(readFileSync(join(copy, "summary.json"), "utf8")) as { passed: number; failed: number; problems: string[] };
    expect(summary.failed).toBeGreaterThanOrEqual(2);
    expect(summary.problems.join("\n")).toContain("crashes.test.ts");
  });

  test("the same runner passes a clean run (the checks above are not always red)", () => {
    rmSync(join(copy, "test"), { recursive: true, force: true });
    mkdirSync(join(copy, "test"));
    writeFileSync(join(copy, "test", "passes.test.ts"), FIXTURES["passes.test.ts"]!);
    const { status, output } = run(["scripts/vitest-runner.ts", "summary.json", "test/"]);
    expect(output).not.toMatch(/did not run/);
    expect(status).toBe(0);
  });
});
