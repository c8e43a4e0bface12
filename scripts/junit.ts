/**
 * JUnit XML for CI systems (Jenkins, GitLab, GitHub test reporters), written by
 * scripts/conformance.ts next to its text and JSON reports. Written here rather than by vitest's
 * junit reporter because each suite must name the target its results came from and each skipped
 * test its reason, which vitest's reporter leaves out.
 */
import { NOT_RUN, type TestResult } from "./vitest-runner.ts";

export interface JUnitRun {
  /** The run's label (sqlite, postgres, deployment). */
  label: string;
  results: TestResult[];
  /** Where one file's tests ran (an in-process database or a deployment URL). */
  targetOf(file: string): string;
}

const xmlEscape = (s: string) =>
  // XML 1.0 allows neither most control characters nor lone surrogates: drop them.
  s
    .replace(/[^\x09\x0A\x0D\x20-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/gu, "")
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;");

export function junitXml(runs: JUnitRun[]): string {
  const out: string[] = ['<?xml version="1.0" encoding="UTF-8"?>'];
  const all = runs.flatMap((r) => r.results);
  // A test that never ran because its file could not start is an error (the run is red), never a skip.
  const count = (rs: TestResult[], s: "failed" | "skipped" | "errors") =>
    rs.filter((t) =>
      s === "failed"
        ? t.status === "failed"
        : s === "errors"
          ? t.status === NOT_RUN
          : t.status !== "passed" && t.status !== "failed" && t.status !== NOT_RUN,
    ).length;
  const seconds = (rs: TestResult[]) => rs.reduce((n, t) => n + (t.duration ?? 0), 0).toFixed(3);
  out.push(
    `<testsuites name="conformance" tests="${all.length}" failures="${count(all, "failed")}" errors="${count(all, "errors")}" skipped="${count(all, "skipped")}" time="${seconds(all)}">`,
  );
  for (const run of runs) {
    const files = [...new Set(run.results.map((t) => t.file))];
    for (const file of files) {
      const tests = run.results.filter((t) => t.file === file);
      const target = run.targetOf(file);
      out.push(
        `  <testsuite name="${xmlEscape(`${run.label}: ${file}`)}" tests="${tests.length}" failures="${count(tests, "failed")}" errors="${count(tests, "errors")}" skipped="${count(tests, "skipped")}" time="${seconds(tests)}">`,
        `    <properties><property name="target" value="${xmlEscape(target)}"/><property name="run" value="${xmlEscape(run.label)}"/></properties>`,
      );
      for (const t of tests) {
        const head = `    <testcase classname="${xmlEscape(`${run.label}.${file}`)}" name="${xmlEscape(t.title)}" time="${(t.duration ?? 0).toFixed(3)}"`;
        if (t.status === "passed") out.push(`${head}/>`);
        else if (t.status === "failed") {
          const message = t.failure ?? "failed";
          out.push(
            `${head}>`,
            `      <failure message="${xmlEscape(message.split("\n")[0]!.slice(0, 500))}">${xmlEscape(message)}</failure>`,
            "    </testcase>",
          );
        } else if (t.status === NOT_RUN) {
          const message = `not run: ${t.reason ?? "its file could not start"}`;
          out.push(
            `${head}>`,
            `      <error message="${xmlEscape(message.slice(0, 500))}">${xmlEscape(message)}</error>`,
            "    </testcase>",
          );
        } else out.push(`${head}>`, `      <skipped message="${xmlEscape(t.skipReason ?? t.status)}"/>`, "    </testcase>");
      }
      out.push("  </testsuite>");
    }
  }
  out.push("</testsuites>");
  return out.join("\n") + "\n";
}
