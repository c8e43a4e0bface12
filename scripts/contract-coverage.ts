/**
 * Contract coverage: which of the responses the documents in generated/openapi/ declare the
 * conformance suite actually got from the services (and our webhook receivers from the services'
 * deliveries), and which of them the Prism mocks gave test/mocks/examples.test.ts. Used by
 * scripts/conformance.ts, which writes contract-coverage.txt and .json beside the clause report.
 *
 * A declared response is keyed by document, operationId, status and content type. It is
 *   covered      when a run got it and it held to the document (conformance/harness/contract-recorder.ts);
 *   allow-listed when conformance/contract-coverage-allowlist.yaml gives the reason no test can
 *                honestly produce it;
 *   uncovered    otherwise.
 * The gate, per run: no answer that broke its document (every run); no allow-list entry for a
 * response a test produced (the list only shrinks) or for one no document declares (in-process
 * runs); nothing uncovered (in-process runs of the whole suite: a run of some files, or against a
 * deployment, where tests that need the in-process service are skipped, covers less by design).
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parse } from "yaml";
import { z } from "zod";
import { contractDocuments, declaredResponses, responseKey, type DeclaredResponse } from "../support/contract/documents.ts";
import type { Observation } from "../support/contract/observation.ts";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
export const ALLOW_LIST_FILE = join(root, "conformance/contract-coverage-allowlist.yaml");
/** Written by test/mocks/examples.test.ts: every (response, example) it obtained from Prism. */
export const MOCK_RECORD_FILE = join(root, ".tmp/contract-coverage-mocks.json");

const AllowEntry = z.strictObject({
  document: z.string().min(1),
  operationId: z.string().min(1),
  status: z.union([z.string(), z.number()]).transform(String),
  /** "" or omitted: a response without a body. */
  contentType: z.string().default(""),
  reason: z.string().trim().min(20, "say why no test can produce it"),
});
export type AllowEntry = z.infer<typeof AllowEntry>;

export function loadAllowList(file = ALLOW_LIST_FILE): AllowEntry[] {
  if (!existsSync(file)) return [];
  const parsed = z.array(AllowEntry).safeParse(parse(readFileSync(file, "utf8")) ?? []);
  if (!parsed.success) throw new Error(`${file}: ${parsed.error.issues.map((i) => `[${i.path.join(".")}] ${i.message}`).join("; ")}`);
  return parsed.data;
}

export function readObservations(dir: string): Observation[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => f.endsWith(".jsonl"))
    .flatMap((f) =>
      readFileSync(join(dir, f), "utf8")
        .split("\n")
        .filter(Boolean)
        .map((line) => JSON.parse(line) as Observation),
    );
}

export interface DocumentCoverage {
  document: string;
  declared: number;
  covered: number;
  allowListed: number;
  uncovered: number;
}

export interface RunCoverage {
  label: string;
  /** Which rules of the gate apply: `full` all, `partial` (some files) all but "nothing uncovered", `deployment` validity only. */
  scope: RunScope;
  documents: DocumentCoverage[];
  /** Declared, never produced, no reason given. */
  uncovered: DeclaredResponse[];
  allowListed: Array<DeclaredResponse & { reason: string }>;
  /** Allow-listed, yet a test produced it: the entry must go. */
  producedButAllowListed: Array<{ key: string; by: string }>;
  /** Allow-list entries naming no declared response (the document changed): the entry must go. */
  unknownAllowListEntries: string[];
  /** Answers (or our webhook requests) that broke their document. */
  invalid: Array<{ key: string; count: number; errors: string[]; by: string }>;
  /** Answers outside every declared operation (unknown paths, preflights, pages), by service, status. */
  outsideOperations: Array<{ service: string; method: string; path: string; status: string; count: number }>;
  /** Answers of test receivers the receiver document does not declare (tests playing misbehaving receivers). */
  undeclaredReceiverAnswers: Array<{ document: string; status: string; count: number }>;
  /** Which test first produced each covered response. */
  coveredBy: Record<string, string>;
}

export type RunScope = "full" | "partial" | "deployment";

const by = (o: Observation) => [o.file, o.test].filter(Boolean).join(" > ") || "(outside a test)";
const observationKey = (o: Observation) =>
  responseKey({ document: o.document!, operationId: o.operationId!, status: o.status, contentType: o.contentType });

export function computeCoverage(
  label: string,
  scope: RunScope,
  declared: DeclaredResponse[],
  observations: Observation[],
  allowList: AllowEntry[],
): RunCoverage {
  const coveredBy: Record<string, string> = {};
  const invalid = new Map<string, { key: string; count: number; errors: string[]; by: string }>();
  const outside = new Map<string, { service: string; method: string; path: string; status: string; count: number }>();
  const undeclaredAnswers = new Map<string, { document: string; status: string; count: number }>();
  for (const o of observations) {
    if (!o.document || !o.operationId) {
      const k = `${o.service} ${o.method} ${o.path ?? ""} ${o.status}`;
      const row = outside.get(k) ?? { service: o.service, method: o.method, path: o.path ?? "", status: o.status, count: 0 };
      row.count++;
      outside.set(k, row);
      if (o.errors.length) invalid.set(k, { key: k, count: (invalid.get(k)?.count ?? 0) + 1, errors: o.errors, by: by(o) });
      continue;
    }
    const key = observationKey(o);
    if (o.errors.length) {
      const row = invalid.get(key) ?? { key, count: 0, errors: o.errors, by: by(o) };
      row.count++;
      invalid.set(key, row);
      continue;
    }
    if (o.kind === "webhook" && !o.declaredAnswer) {
      const k = `${o.document} ${o.status}`;
      undeclaredAnswers.set(k, {
        document: o.document,
        status: o.status === "0" ? "no answer" : o.status,
        count: (undeclaredAnswers.get(k)?.count ?? 0) + 1,
      });
      continue;
    }
    coveredBy[key] ??= by(o);
  }

  const declaredKeys = new Set(declared.map(responseKey));
  const allowByKey = new Map(allowList.map((e) => [responseKey(e), e]));
  const uncovered: DeclaredResponse[] = [];
  const allowListed: Array<DeclaredResponse & { reason: string }> = [];
  const documents = new Map<string, DocumentCoverage>();
  for (const r of declared) {
    const key = responseKey(r);
    const row = documents.get(r.document) ?? { document: r.document, declared: 0, covered: 0, allowListed: 0, uncovered: 0 };
    documents.set(r.document, row);
    row.declared++;
    const allowed = allowByKey.get(key);
    if (coveredBy[key]) row.covered++;
    else if (allowed) {
      row.allowListed++;
      allowListed.push({ ...r, reason: allowed.reason });
    } else {
      row.uncovered++;
      uncovered.push(r);
    }
  }
  return {
    label,
    scope,
    documents: [...documents.values()],
    uncovered,
    allowListed,
    producedButAllowListed: [...allowByKey.keys()].filter((k) => coveredBy[k]).map((key) => ({ key, by: coveredBy[key]! })),
    unknownAllowListEntries: [...allowByKey.keys()].filter((k) => !declaredKeys.has(k)),
    invalid: [...invalid.values()],
    outsideOperations: [...outside.values()].sort((a, b) => b.count - a.count),
    undeclaredReceiverAnswers: [...undeclaredAnswers.values()],
    coveredBy,
  };
}

/** Why the run fails the gate, one line each; empty when it passes. */
export function gateFailures(run: RunCoverage): string[] {
  const failures = run.invalid.map(
    (i) => `${run.label}: ${i.key} broke the document ${i.count}× (${i.errors.slice(0, 3).join("; ")}) in ${i.by}`,
  );
  if (run.scope === "deployment") return failures;
  if (run.scope === "full") {
    for (const r of run.uncovered)
      failures.push(
        `${run.label}: ${responseKey(r)} is declared but no test produced it: write a test, or add it to the allow-list with the reason no test can`,
      );
  }
  for (const p of run.producedButAllowListed)
    failures.push(`${run.label}: ${p.key} is allow-listed but ${p.by} produced it: remove it from the allow-list`);
  for (const k of run.unknownAllowListEntries)
    failures.push(`${run.label}: allow-list entry "${k}" names no declared response: remove or correct it`);
  return failures;
}

export interface MockRecord {
  generatedAt: string;
  /** Every (response, example) test/mocks/examples.test.ts obtained from Prism, status and content type checked. */
  obtained: Array<{ document: string; operationId: string; status: string; contentType: string; example: string | null }>;
}

/** Each declared response with each documented example is one thing a mock must give (a response without examples counts once). */
export const mockUnits = (declared: DeclaredResponse[]) =>
  declared.flatMap((r) =>
    r.examples.length ? r.examples.map((example) => ({ ...r, example })) : [{ ...r, example: null as string | null }],
  );
export const mockUnitKey = (u: { document: string; operationId: string; status: string; contentType: string; example: string | null }) =>
  `${responseKey(u)}${u.example ? ` example "${u.example}"` : ""}`;

export interface MockCoverage {
  generatedAt: string | null;
  documents: Array<{ document: string; declared: number; obtained: number }>;
  missing: string[];
}

export function mockCoverage(declared: DeclaredResponse[], record: MockRecord | undefined): MockCoverage {
  const obtained = new Set((record?.obtained ?? []).map(mockUnitKey));
  const documents = new Map<string, { document: string; declared: number; obtained: number }>();
  const missing: string[] = [];
  for (const u of mockUnits(declared)) {
    const row = documents.get(u.document) ?? { document: u.document, declared: 0, obtained: 0 };
    documents.set(u.document, row);
    row.declared++;
    if (obtained.has(mockUnitKey(u))) row.obtained++;
    else missing.push(mockUnitKey(u));
  }
  return { generatedAt: record?.generatedAt ?? null, documents: [...documents.values()], missing };
}

export function readMockRecord(file = MOCK_RECORD_FILE): MockRecord | undefined {
  return existsSync(file) ? (JSON.parse(readFileSync(file, "utf8")) as MockRecord) : undefined;
}

export const currentDeclaredResponses = (): DeclaredResponse[] => declaredResponses(contractDocuments());

const pct = (n: number, d: number) => (d ? `${((100 * n) / d).toFixed(1)}%` : "-");

/** The text report (contract-coverage.txt), also printed in the summary of `npm run conformance`. */
export function coverageText(runs: RunCoverage[], mocks: MockCoverage): string {
  const lines: string[] = [];
  for (const run of runs) {
    const notes = {
      full: "",
      partial: " (some files only: what is not produced is listed, not failed)",
      deployment: " (a deployment: tests that need the in-process service are skipped, so only invalid answers fail)",
    };
    lines.push(`${run.label}${notes[run.scope]}`);
    lines.push(
      `  ${"document".padEnd(20)} ${"declared".padStart(8)} ${"covered".padStart(8)} ${"reasoned".padStart(8)} ${"uncovered".padStart(9)}  covered or reasoned`,
    );
    const total = { declared: 0, covered: 0, allowListed: 0, uncovered: 0 };
    for (const d of run.documents) {
      lines.push(
        `  ${d.document.padEnd(20)} ${String(d.declared).padStart(8)} ${String(d.covered).padStart(8)} ${String(d.allowListed).padStart(8)} ${String(d.uncovered).padStart(9)}  ${pct(d.covered + d.allowListed, d.declared)}`,
      );
      total.declared += d.declared;
      total.covered += d.covered;
      total.allowListed += d.allowListed;
      total.uncovered += d.uncovered;
    }
    lines.push(
      `  ${"all".padEnd(20)} ${String(total.declared).padStart(8)} ${String(total.covered).padStart(8)} ${String(total.allowListed).padStart(8)} ${String(total.uncovered).padStart(9)}  ${pct(total.covered + total.allowListed, total.declared)}`,
    );
    const section = (title: string, rows: string[]) => rows.length && lines.push(`  ${title}`, ...rows.map((r) => `    ${r}`));
    section(
      "INVALID (answered, but broke the document; fails the run):",
      run.invalid.map((i) => `${i.key} ×${i.count}: ${i.errors.slice(0, 3).join("; ")} (${i.by})`),
    );
    section("never produced, no reason given:", run.uncovered.map(responseKey));
    section(
      "allow-listed but produced (remove from the allow-list):",
      run.producedButAllowListed.map((p) => `${p.key} (${p.by})`),
    );
    section("allow-list entries naming no declared response:", run.unknownAllowListEntries);
    section(
      "never produced, reason in conformance/contract-coverage-allowlist.yaml:",
      run.allowListed.map((a) => `${responseKey(a)}: ${a.reason}`),
    );
    section(
      "answers outside any declared operation (not counted):",
      run.outsideOperations
        .slice(0, 15)
        .map((o) => `${o.service} ${o.method} ${o.path} → ${o.status} ×${o.count}`)
        .concat(run.outsideOperations.length > 15 ? [`… ${run.outsideOperations.length - 15} more in contract-coverage.json`] : []),
    );
    section(
      "receiver answers the receiver documents do not declare (tests playing a misbehaving receiver; not counted):",
      run.undeclaredReceiverAnswers.map((u) => `${u.document} ${u.status} ×${u.count}`),
    );
    lines.push("");
  }
  lines.push(
    `mocks (test/mocks/examples.test.ts${mocks.generatedAt ? `, run at ${mocks.generatedAt}` : ": not run yet, node node_modules/vitest/vitest.mjs run test/mocks/examples.test.ts"}): each declared response with each of its examples`,
  );
  for (const d of mocks.documents)
    lines.push(
      `  ${d.document.padEnd(20)} ${String(d.obtained).padStart(4)} of ${String(d.declared).padEnd(4)} obtained  ${pct(d.obtained, d.declared)}`,
    );
  if (mocks.generatedAt && mocks.missing.length) lines.push("  not obtained:", ...mocks.missing.map((m) => `    ${m}`));
  return `${lines.join("\n")}\n`;
}
