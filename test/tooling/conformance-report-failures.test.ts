/**
 * What `npm run conformance` says when a file cannot start or a test fails, run on fixture files in
 * a temporary copy of the runner (test/tooling/runner-copy.ts):
 * - a file whose beforeAll throws (a deployment's 429 while making the file's users): each of its
 *   tests is "not run: <the error>" in the text report, the JSON (status and reason) and JUnit (an
 *   error), its clauses "not run" rather than "not covered", and the run fails;
 * - a test that fails on a status: its message carries the problem the service sent
 *   (conformance/harness/setup.ts), not only `expected 400 to be 201`;
 * - a test whose registration a deployment refuses with 429 (its registration limit) is skipped
 *   with the reason, naming CONFORMANCE_IDENTITY_USERS, never failed or passed.
 */
import { cpSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, expect, test } from "vitest";
import { runnerCopy } from "./runner-copy.ts";
import { ROOT } from "../support/server-process.ts";

const FIXTURES: Record<string, string> = {
  "cannot-start.test.ts": `import { beforeAll, describe, expect, test } from "vitest";
beforeAll(() => { throw new Error("the deployment refused a registration: Too many registrations from this address."); });
test("X-FIXTURE-6 needs the file's user", () => expect(1).toBe(1));
describe("a group", () => { test("X-FIXTURE-7 needs it too", () => expect(1).toBe(1)); });
`,
  // A service that answers every request with a validation problem, as the real ones do.
  "fails-on-a-problem.test.ts": `import { createServer } from "node:http";
import { afterAll, beforeAll, expect, test } from "vitest";
const server = createServer((req, res) => {
  res.writeHead(400, { "content-type": "application/problem+json" });
  res.end(JSON.stringify({ type: "about:blank", title: "Bad Request", status: 400, code: "validation_failed",
    detail: "The request is invalid.", errors: [{ field: "body.email", message: 'must match format "email"' }] }));
});
let url = "";
beforeAll(async () => {
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  url = "http://127.0.0.1:" + (server.address() as { port: number }).port;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));
test("X-FIXTURE-8 registers a user", async () => {
  const res = await fetch(url + "/api/users", { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
  await res.text();
  expect(res.status).toBe(201);
});
`,
  // As a fixture finds out on a deployment (conformance/harness/skip.ts), inside a test.
  "registration-refused.test.ts": `import { expect, test } from "vitest";
import { skipWhenRegistrationRefused } from "../harness/skip.ts";
test("X-FIXTURE-9 registers a user on a deployment that has spent its budget", () => {
  skipWhenRegistrationRefused({}, 429, { detail: "Too many registrations from this address. Try again in 3532 seconds." });
  expect.unreachable();
});
`,
};

let copy: ReturnType<typeof runnerCopy>;
let result: { status: number | null; output: string };
const report = () =>
  JSON.parse(readFileSync(join(copy.dir, "conformance-report.json"), "utf8")) as {
    runs: Array<{ failed: number; notRun: number }>;
    tests: Array<{ file: string; title: string; status: string; reason?: string; skipReason?: string }>;
    clauses: Array<{ id: string; results: Record<string, string> }>;
  };

beforeAll(() => {
  copy = runnerCopy("conformance-report-failures-");
  mkdirSync(join(copy.dir, "conformance/fixture"), { recursive: true });
  for (const [name, text] of Object.entries(FIXTURES)) writeFileSync(join(copy.dir, "conformance/fixture", name), text);
  cpSync(join(ROOT, "conformance/harness/skip.ts"), join(copy.dir, "conformance/harness/skip.ts"));
  result = copy.run(["scripts/conformance.ts", "conformance/fixture"], 90_000);
}, 120_000);

afterAll(() => copy?.remove());

test("a file that could not start: its tests are 'not run: <why>' in every report, its clauses 'not run', and the run fails", () => {
  expect(result.status).not.toBe(0);
  const r = report();
  const ofFile = r.tests.filter((t) => t.file === "conformance/fixture/cannot-start.test.ts");
  // The file's own failure, which makes the run red, beside its tests.
  expect(ofFile.filter((t) => t.status === "failed").map((t) => t.title)).toEqual([
    expect.stringMatching(/^\(did not run\) conformance\/fixture\/cannot-start\.test\.ts: .*Too many registrations/),
  ]);
  const notRun = ofFile.filter((t) => t.status !== "failed");
  expect(notRun.map((t) => t.status)).toEqual(["not run", "not run"]);
  for (const t of notRun) expect(t.reason).toContain("Too many registrations from this address.");
  expect(r.runs[0]!.notRun).toBe(2);
  expect(r.runs[0]!.failed).toBeGreaterThanOrEqual(2); // the file's own "(did not run)" entry and the failed test

  const text = readFileSync(join(copy.dir, "conformance-report.txt"), "utf8");
  expect(text).toMatch(/X-FIXTURE-6 needs the file's user: not run: the deployment refused a registration/);
  expect(text).toMatch(/^X-FIXTURE-6 +not run/m);
  expect(r.clauses.find((c) => c.id === "X-FIXTURE-7")!.results.sqlite).toBe("not run");

  const junit = readFileSync(join(copy.dir, "conformance-report.junit.xml"), "utf8");
  expect(junit).toMatch(/name="X-FIXTURE-6 needs the file&apos;s user|name="X-FIXTURE-6 needs the file's user/);
  expect(junit).toContain('<error message="not run: the deployment refused a registration: Too many registrations from this address."');
  expect(junit).toMatch(/errors="2"/);
  expect(junit).not.toMatch(/<skipped message="skipped"/);
});

test("a failed test's message carries the problem the service answered with (method, path, status, code, field errors)", () => {
  const r = JSON.parse(readFileSync(join(copy.dir, ".tmp/vitest-sqlite.json"), "utf8")) as {
    testResults: Array<{ name: string; assertionResults: Array<{ title: string; failureMessages: string[] }> }>;
  };
  const failed = r.testResults.flatMap((f) => f.assertionResults).find((t) => t.title === "X-FIXTURE-8 registers a user")!;
  expect(failed.failureMessages[0]).toContain("expected 400 to be 201");
  expect(failed.failureMessages[0]).toContain('POST /api/users → 400 validation_failed: body.email must match format "email"');
  const junit = readFileSync(join(copy.dir, "conformance-report.junit.xml"), "utf8");
  expect(junit).toContain("POST /api/users → 400 validation_failed: body.email must match format &quot;email&quot;");
});

test("a registration the deployment refuses with 429 skips the test with the reason, naming the pool setting", () => {
  const t = report().tests.find((x) => x.title.startsWith("X-FIXTURE-9"))!;
  expect(t.status).toBe("skipped");
  expect(t.skipReason).toContain("CONFORMANCE_IDENTITY_USERS");
  expect(t.skipReason).toContain("Too many registrations from this address.");
  const junit = readFileSync(join(copy.dir, "conformance-report.junit.xml"), "utf8");
  expect(junit).toMatch(/<skipped message="needs a user registered over POST \/api\/users, which the deployment refused with 429/);
});

test("CONFORMANCE_DATABASE_URL (the in-process services' PostgreSQL) does not make the run a deployment's", () => {
  const r = copy.run(["scripts/conformance.ts", "conformance/fixture/registration-refused.test.ts"], 90_000, {
    CONFORMANCE_DATABASE_URL: "postgres://nobody@127.0.0.1:9/unused",
  });
  expect(r.output).toContain("=== conformance on postgres ===");
  expect(r.output).not.toContain("=== conformance on deployment ===");
}, 120_000);
