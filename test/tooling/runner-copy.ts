/**
 * A temporary copy of what the test runners need (vitest.config.ts and its setup file, scripts/conformance.ts,
 * scripts/vitest-runner.ts and the report writers, the clause list, the contract-coverage documents
 * and allow-list), with node_modules linked, for tests that run the runners themselves on fixture
 * test files; and how to run a script there, outside this vitest run.
 */
import { spawnSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "../..");

const RUNNER_FILES = [
  "vitest.config.ts",
  "package.json",
  "scripts/conformance.ts",
  "scripts/clause-report.ts",
  "scripts/vitest-runner.ts",
  "scripts/junit.ts",
  "conformance/clauses.md",
  "scripts/contract-coverage.ts",
  "support/contract/documents.ts",
  "support/contract/observation.ts",
  "conformance/harness/setup.ts",
  "conformance/harness/answers.ts",
  "conformance/contract-coverage-allowlist.yaml",
  "generated/openapi",
];

export function runnerCopy(prefix: string) {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  for (const f of RUNNER_FILES) {
    mkdirSync(dirname(join(dir, f)), { recursive: true });
    cpSync(join(root, f), join(dir, f), { recursive: true });
  }
  symlinkSync(join(root, "node_modules"), join(dir, "node_modules"));
  return {
    dir,
    /** Runs `node --import tsx <args>` in the copy, without this run's VITEST_* and CONFORMANCE_* settings (but `extraEnv`). */
    run(args: string[], timeout = 120_000, extraEnv: Record<string, string> = {}) {
      const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("VITEST") && !k.startsWith("CONFORMANCE_")));
      const r = spawnSync(process.execPath, ["--import", "tsx", ...args], {
        cwd: dir,
        env: { ...env, NODE_ENV: "test", ...extraEnv },
        encoding: "utf8",
        timeout,
      });
      return { status: r.status, output: `${r.stdout}\n${r.stderr}` };
    },
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
