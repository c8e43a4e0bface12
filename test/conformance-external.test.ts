/**
 * The conformance suite as QA runs it against a deployment (issue 11, item 7): the real server
 * (`npm start`) in a child process on free ports with SQLite in a temp folder, its admin, email API
 * key and repository user made with `npm run admin`, then `npm run conformance` with the
 * CONFORMANCE_*_URL settings, twice against the same deployment (everything provisioned is
 * uniquely named, so the second run must pass too). Asserted: no failure, tests that need the
 * in-process target reported skipped with their reason (never passed), the JUnit file written,
 * every result attributed to the deployment's URL.
 *
 * A subset of files keeps it cheap; each service's deployment path and both kinds of skip are in it.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { freePort } from "../scripts/lib/free-port.ts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { admin, killAll, ROOT, startServer, serverEnv, type ServerProcess } from "./server-process.ts";

const FILES = [
  "conformance/identity/discovery.test.ts",
  "conformance/identity/pkce.test.ts",
  "conformance/identity/sign-in-throttle.test.ts",
  "conformance/repository/agents.test.ts",
  "conformance/repository/repositories.test.ts",
  "conformance/email/messages.test.ts",
];

const run = promisify(execFile);
let dataDir: string;
let server: ServerProcess & { urls: Record<"identity" | "repository" | "email", string> };
let env: Record<string, string>;

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), "conformance-external-"));
  // Fixed free ports: the identity service's public URL (issuer, dashboard redirect) must be the one clients use.
  const [identity, repository, email] = [await freePort(), await freePort(), await freePort()];
  const serverSettings = {
    IDENTITY_PORT: String(identity),
    IDENTITY_PUBLIC_URL: `http://127.0.0.1:${identity}`,
    REPOSITORY_PORT: String(repository),
    EMAIL_PORT: String(email),
    EMAIL_PUBLIC_URL: `http://127.0.0.1:${email}`,
  };
  const adminEnv = serverEnv(dataDir, serverSettings);
  const adminPassword = "conformance admin password";
  admin(adminEnv, ["identity", "create-org", "QA Org", "qa-admin@example.com"], `${adminPassword}\n`);
  const apiKey = admin(adminEnv, ["email", "create-api-key", "qa"]).trim().split("\n").at(-1)!;
  admin(adminEnv, ["repository", "create-user", "qa-user@example.com"], "qa user password\n");
  server = await startServer(dataDir, serverSettings);
  env = {
    CONFORMANCE_IDENTITY_URL: server.urls.identity,
    CONFORMANCE_IDENTITY_ADMIN_EMAIL: "qa-admin@example.com",
    CONFORMANCE_IDENTITY_ADMIN_PASSWORD: adminPassword,
    CONFORMANCE_REPOSITORY_URL: server.urls.repository,
    CONFORMANCE_REPOSITORY_EMAIL: "qa-user@example.com",
    CONFORMANCE_REPOSITORY_PASSWORD: "qa user password",
    CONFORMANCE_EMAIL_URL: server.urls.email,
    CONFORMANCE_EMAIL_API_KEY: apiKey,
  };
}, 180_000);

afterAll(async () => {
  if (server) {
    server.child.kill("SIGTERM");
    await server.exited;
  }
  killAll();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

interface Report {
  runs: Array<{ label: string; passed: number; failed: number; skipped: number; targets: Record<string, string> }>;
  tests: Array<{ run: string; target: string; file: string; title: string; status: string; skipReason?: string }>;
}

async function conformance(reportDir: string): Promise<{ report: Report; junit: string; text: string; output: string }> {
  const childEnv = Object.fromEntries(
    Object.entries({ ...process.env, ...env, CONFORMANCE_REPORT_DIR: reportDir }).filter(
      ([k]) => !k.startsWith("VITEST") && k !== "CONFORMANCE_DATABASE_URL",
    ),
  );
  let output: string;
  try {
    const r = await run(process.execPath, ["--import", "tsx", "scripts/conformance.ts", ...FILES], {
      cwd: ROOT,
      env: childEnv,
      maxBuffer: 64 * 1024 * 1024,
    });
    output = r.stdout + r.stderr;
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string };
    throw new Error(`npm run conformance failed against the deployment:\n${e.stdout ?? ""}\n${e.stderr ?? ""}`);
  }
  return {
    report: JSON.parse(readFileSync(join(reportDir, "conformance-report.json"), "utf8")) as Report,
    junit: readFileSync(join(reportDir, "conformance-report.junit.xml"), "utf8"),
    text: readFileSync(join(reportDir, "conformance-report.txt"), "utf8"),
    output,
  };
}

describe("npm run conformance against a deployment", () => {
  for (const attempt of ["first", "second"]) {
    it(`the ${attempt} run against the same deployment passes, skips what needs the in-process target with a reason, writes JUnit and names the deployment as the target`, async () => {
      const reportDir = mkdtempSync(join(tmpdir(), "conformance-report-"));
      try {
        const { report, junit, text } = await conformance(reportDir);
        expect(report.runs).toHaveLength(1);
        const [only] = report.runs;
        expect(only!.label).toBe("deployment");
        expect(only!.failed).toBe(0);
        expect(only!.passed).toBeGreaterThan(10);
        expect(only!.targets).toEqual({ identity: server.urls.identity, repository: server.urls.repository, email: server.urls.email });

        // Every file ran against its service's URL.
        const files = new Set(report.tests.map((t) => t.file));
        expect([...files].sort()).toEqual([...FILES].sort());
        for (const t of report.tests)
          expect(t.target, t.file).toBe(server.urls[t.file.split("/")[1] as "identity" | "repository" | "email"]);

        // The clock-driven and client-address tests: skipped with their reason, not passed.
        const skipped = report.tests.filter((t) => t.status === "skipped");
        expect(skipped.length).toBe(only!.skipped);
        expect(skipped.map((t) => t.file)).toEqual(
          expect.arrayContaining([
            "conformance/identity/sign-in-throttle.test.ts",
            "conformance/repository/agents.test.ts",
            "conformance/repository/repositories.test.ts",
          ]),
        );
        for (const t of skipped) expect(t.skipReason, t.title).toMatch(/needs /);
        expect(report.tests.find((t) => t.title.startsWith("X-RB-4 an expired agent token"))).toMatchObject({
          status: "skipped",
          skipReason: expect.stringMatching(/clock/),
        });
        expect(text).toContain(`identity ${server.urls.identity}`);
        expect(text).toMatch(/skipped \(not counted as passed\)/);

        // JUnit: one suite per file, the target as a property, skips with their message.
        expect(junit).toMatch(/^<\?xml version="1.0" encoding="UTF-8"\?>\n<testsuites name="conformance" /);
        expect(junit).toContain(`tests="${report.tests.length}" failures="0" errors="0" skipped="${skipped.length}"`);
        expect(junit).toContain(`<property name="target" value="${server.urls.repository}"/>`);
        expect(junit).toMatch(/<skipped message="needs the injected clock[^"]*"\/>/);
        expect((junit.match(/<testcase /g) ?? []).length).toBe(report.tests.length);

        // Contract coverage (issue 13): the deployment's answers were recorded and validated, none broke its document.
        const coverage = JSON.parse(readFileSync(join(reportDir, "contract-coverage.json"), "utf8"));
        expect(coverage.runs).toHaveLength(1);
        expect(coverage.runs[0]).toMatchObject({ label: "deployment", scope: "deployment", invalid: [] });
        expect(coverage.gate).toEqual([]);
        const covered = Object.fromEntries(
          coverage.runs[0].documents.map((d: { document: string; covered: number }) => [d.document, d.covered]),
        );
        for (const service of ["identity", "repository", "email"])
          expect(covered[service], `${service} answers recorded`).toBeGreaterThan(3);
        expect(readFileSync(join(reportDir, "contract-coverage.txt"), "utf8")).toMatch(/^deployment \(a deployment/);
      } finally {
        rmSync(reportDir, { recursive: true, force: true });
      }
    }, 300_000);
  }
});
