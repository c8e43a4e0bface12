/**
 * The test runners fail on what they did not see finish. A temporary copy of the project's runner
 * files (test/tooling/runner-copy.ts) gets fixture test files that crash their worker, report no tests, or
 * throw outside any test, beside one that passes; both runners must exit non-zero and name each bad file.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { runnerCopy } from "./runner-copy.ts";

const FIXTURES: Record<string, string> = {
  "passes.test.ts": `import { test, expect } from "vitest";\ntest("X-FIXTURE-1 passes", () => expect(1).toBe(1));\n`,
  // The worker dies mid-test, as better-sqlite3 12 did on Node 24 (an abort in native code).
  "crashes.test.ts": `import { test } from "vitest";\ntest("X-FIXTURE-2 crashes its worker", async () => { await new Promise((r) => setTimeout(r, 50)); process.abort(); });\n`,
  "no-tests.test.ts": `export const nothing = 1;\n`,
  "throws-later.test.ts": `import { test } from "vitest";\ntest("X-FIXTURE-3 leaves an error behind", () => { setTimeout(() => { throw new Error("thrown after the test"); }, 1); });\n`,
};

let copy: ReturnType<typeof runnerCopy>;
const run = (args: string[]) => copy.run(args, 60_000);

beforeAll(() => {
  copy = runnerCopy("runner-copy-");
  for (const dir of ["conformance/fixture", "test"]) {
    mkdirSync(join(copy.dir, dir), { recursive: true });
    for (const [name, text] of Object.entries(FIXTURES)) writeFileSync(join(copy.dir, dir, name), text);
  }
});

afterAll(() => copy?.remove());

describe("a crashed, empty or erroring test file fails the run", () => {
  test("npm run conformance: exit non-zero, each bad file named, and counted as failures", () => {
    const { status, output } = run(["scripts/conformance.ts", "conformance/fixture"]);
    expect(status).not.toBe(0);
    expect(output).toMatch(/conformance\/fixture\/crashes\.test\.ts: did not run to completion/);
    expect(output).toMatch(/conformance\/fixture\/no-tests\.test\.ts: reports no tests/);
    expect(output).toMatch(/unhandled error/);
    const report = JSON.parse(readFileSync(join(copy.dir, "conformance-report.json"), "utf8")) as { runs: Array<{ failed: number }> };
    expect(report.runs[0]!.failed).toBeGreaterThanOrEqual(2);
    expect(output).toMatch(/conformance: \d+ passed, [1-9]\d* failed/);
  });

  test("npm test's project-tests step: exit non-zero and the summary counts the bad files", () => {
    const { status, output } = run(["scripts/vitest-runner.ts", "summary.json", "test/"]);
    expect(status).not.toBe(0);
    expect(output).toMatch(/test\/crashes\.test\.ts: did not run to completion/);
    expect(output).toMatch(/test\/no-tests\.test\.ts: reports no tests/);
    const summary = JSON.parse(readFileSync(join(copy.dir, "summary.json"), "utf8")) as {
      passed: number;
      failed: number;
      problems: string[];
    };
    expect(summary.failed).toBeGreaterThanOrEqual(2);
    expect(summary.problems.join("\n")).toContain("crashes.test.ts");
  });

  test("the same runner passes a clean run (the checks above are not always red)", () => {
    rmSync(join(copy.dir, "test"), { recursive: true, force: true });
    mkdirSync(join(copy.dir, "test"));
    writeFileSync(join(copy.dir, "test", "passes.test.ts"), FIXTURES["passes.test.ts"]!);
    const { status, output } = run(["scripts/vitest-runner.ts", "summary.json", "test/"]);
    expect(output).not.toMatch(/did not run/);
    expect(status).toBe(0);
  });
});
