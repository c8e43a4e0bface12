/**
 * Runs vitest and trusts nothing it did not see finish: a test file whose worker crashed, that
 * failed to load, or that reports no tests, and an unhandled error anywhere, each fail the run
 * and are named, even when every test that did report passed. (A crashed worker leaves its
 * file's tests "pending" and vitest's JSON still says 0 failed.)
 *
 * Used by scripts/conformance.ts and, as a command, by `npm test`'s project-tests step:
 *
 *   node --import tsx scripts/vitest-runner.ts <summary.json> <vitest filters and options...>
 *
 * which runs `vitest run`, prints every problem, writes {passed, failed, problems, tests} to
 * <summary.json> (tests: each test's file, title, status and a failure's first line, which the clause report of
 * scripts/conformance.ts reads with --project-tests) and exits non-zero when anything failed or
 * did not run.
 */
import { spawn, spawnSync } from "node:child_process";
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { pathToFileURL } from "node:url";

export interface TestResult {
  title: string;
  status: string;
  file: string;
  /** Seconds, when vitest timed it. */
  duration?: number;
  /** Why it was skipped (conformance/harness/skip.ts puts it in the task's meta). */
  skipReason?: string;
  /** The first failure message, for a failed test. */
  failure?: string;
  /** Why a test of a file that could not start or finish never ran (status "not run"). */
  reason?: string;
}

/** The status of a test that never ran because its file could not start (a beforeAll threw) or its worker died. */
export const NOT_RUN = "not run";
export interface VitestRun {
  results: TestResult[];
  /** Everything that makes the run untrustworthy beyond a failed assertion, one line each. */
  problems: string[];
}

interface VitestJson {
  success: boolean;
  testResults: Array<{
    name: string;
    status: string;
    message?: string;
    assertionResults: Array<{
      title: string;
      status: string;
      duration?: number;
      failureMessages?: string[];
      meta?: { skipReason?: string };
    }>;
  }>;
}

export interface VitestOptions {
  root: string;
  outFile: string;
  args: string[];
  env?: Record<string, string>;
  /** Where vitest's own output goes instead of this process's: runs side by side each write their own. */
  logFile?: string;
}

/** Runs `vitest run` to its end (other work of this process goes on meanwhile) and reads what it reported. */
export async function runVitest(options: VitestOptions): Promise<VitestRun> {
  const { root, outFile } = options;
  mkdirSync(dirname(outFile), { recursive: true });
  rmSync(outFile, { force: true });
  // A vitest run started from inside another (the runner's own test) must not inherit its state.
  const env = Object.fromEntries(Object.entries({ ...process.env, ...options.env }).filter(([k]) => !k.startsWith("VITEST")));
  const log = options.logFile ? openSync(options.logFile, "w") : undefined;
  const child = spawn(
    process.execPath,
    [
      join(root, "node_modules/vitest/vitest.mjs"),
      "run",
      ...options.args,
      "--reporter=default",
      "--reporter=json",
      `--outputFile.json=${outFile}`,
    ],
    { cwd: root, stdio: log === undefined ? "inherit" : ["ignore", log, log], env: env as NodeJS.ProcessEnv },
  );
  const run = await new Promise<{ status: number | null; signal: NodeJS.Signals | null }>((resolve, reject) => {
    child.once("error", reject);
    child.once("close", (status, signal) => resolve({ status, signal }));
  }).finally(() => {
    if (log !== undefined) closeSync(log);
  });
  return readVitestRun(root, outFile, run);
}

/** What a finished vitest run reported in its JSON, with every reason not to trust it. */
function readVitestRun(root: string, outFile: string, run: { status: number | null; signal: NodeJS.Signals | null }): VitestRun {
  const exit = run.signal ? `signal ${run.signal}` : `status ${run.status}`;
  if (!existsSync(outFile)) return { results: [], problems: [`vitest wrote no results (it ended with ${exit})`] };

  const json = JSON.parse(readFileSync(outFile, "utf8")) as VitestJson;
  const results: TestResult[] = [];
  const problems: string[] = [];
  for (const file of json.testResults) {
    const name = relative(root, file.name);
    const tests = file.assertionResults.map((t) => ({
      title: t.title,
      status: t.status,
      file: name,
      ...(t.duration !== undefined ? { duration: t.duration / 1000 } : {}),
      ...(t.meta?.skipReason ? { skipReason: t.meta.skipReason } : {}),
      ...(t.failureMessages?.length ? { failure: t.failureMessages[0]! } : {}),
    }));
    results.push(...tests);
    const firstLine = (file.message ?? "").split("\n").find((l) => l.trim()) ?? "";
    if (tests.length === 0) problems.push(`${name}: reports no tests${firstLine ? ` (${firstLine})` : ""}`);
    else if (file.status !== "passed" && !tests.some((t) => t.status === "failed")) {
      // Failed with no failed test: its worker crashed or it failed outside any test.
      const unfinished = tests.filter((t) => t.status === "pending").length;
      problems.push(
        `${name}: did not run to completion (${unfinished} of ${tests.length} tests never finished; crashed worker or error outside a test)${firstLine ? `: ${firstLine}` : ""}`,
      );
    }
    if (file.status !== "passed") {
      // vitest lists the tests of a file (or describe block) whose beforeAll threw as "skipped" with no
      // reason, and those of a crashed worker as "pending": neither ran, and each says why. A test
      // skipped on purpose keeps its own reason; in a file that failed on a test, skips are skips.
      const why = firstLine || "the file did not run to completion (crashed worker or error outside a test)";
      const failedOutsideTests = !tests.some((t) => t.status === "failed");
      for (const t of tests)
        if (t.status === "pending" || (failedOutsideTests && t.status === "skipped" && !t.skipReason))
          Object.assign(t, { status: NOT_RUN, reason: why });
    }
  }
  const failedTests = results.filter((t) => t.status === "failed").length;
  if (run.status !== 0 && problems.length === 0 && failedTests === 0) {
    problems.push(
      `vitest ended with ${exit} although every reported test passed: an unhandled error or a crashed worker (see "Unhandled Errors" above)`,
    );
  }
  return { results, problems };
}

/** A failure message's first non-blank line: enough to name what broke in a summary. */
export function firstLineOf(message: string): string {
  return (message.split("\n").find((l) => l.trim()) ?? "").trim().slice(0, 300);
}

/**
 * The tests vitest would run, by file and title, without running them (`vitest list`): for the
 * clause report when the project tests do not run; or why it could not list them.
 */
export function listVitest(options: {
  root: string;
  outFile: string;
  args: string[];
}): { tests: Array<{ file: string; title: string }> } | { error: string } {
  const { root, outFile } = options;
  mkdirSync(dirname(outFile), { recursive: true });
  rmSync(outFile, { force: true });
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("VITEST")));
  const run = spawnSync(process.execPath, [join(root, "node_modules/vitest/vitest.mjs"), "list", ...options.args, `--json=${outFile}`], {
    cwd: root,
    env: env as NodeJS.ProcessEnv,
    encoding: "utf8",
  });
  if (run.status !== 0 || !existsSync(outFile))
    return {
      error: `vitest list ended with ${run.signal ? `signal ${run.signal}` : `status ${run.status}`}: ${(run.stderr || run.stdout).trim().split("\n")[0] ?? ""}`,
    };
  const listed = JSON.parse(readFileSync(outFile, "utf8")) as Array<{ name: string; file: string }>;
  // `name` is "describe > … > title"; the clause report counts the test's own title only.
  return { tests: listed.map((t) => ({ file: relative(root, t.file), title: t.name.split(" > ").at(-1)! })) };
}

async function main(): Promise<void> {
  const [summaryFile, ...args] = process.argv.slice(2);
  if (!summaryFile) throw new Error("usage: vitest-runner.ts <summary.json> <vitest args...>");
  const root = process.cwd();
  const run = await runVitest({ root, outFile: `${resolve(summaryFile)}.vitest.json`, args });
  const passed = run.results.filter((t) => t.status === "passed").length;
  const failed = run.results.filter((t) => t.status === "failed").length + run.problems.length;
  const tests = run.results.map((t) => ({
    file: t.file,
    title: t.title,
    status: t.status,
    ...(t.failure ? { failure: firstLineOf(t.failure) } : {}),
  }));
  writeFileSync(
    summaryFile,
    JSON.stringify({ generatedAt: new Date().toISOString(), passed, failed, problems: run.problems, tests }, null, 2) + "\n",
  );
  if (run.problems.length)
    console.error(`\nThese did not run as they should (each fails the run):\n${run.problems.map((p) => `  - ${p}`).join("\n")}`);
  if (passed === 0 && failed === 0) console.error("no test ran");
  process.exitCode = failed > 0 || passed === 0 ? 1 : 0;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) await main();
