/**
 * The configuration's documents (app/config-docs.ts): docs/configuration.md and .env.example are
 * written from the sections' schemas and `npm test` checks that they still are; every variable is
 * in both, described once; the sample environment is a valid configuration and names what a
 * production deployment sets.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterEach, describe, expect, it } from "vitest";
import { configDocuments, driftedDocuments, variablesOf } from "../../app/config-docs.ts";
import { CONFIG_SECTIONS, loadConfig } from "../../app/load-config.ts";

const root = join(import.meta.dirname, "../..");
const run = promisify(execFile);
const docs = (...args: string[]) =>
  run(process.execPath, ["--import", "tsx", "app/config-docs.ts", ...args], { cwd: root }).then(
    (r) => ({ code: 0, out: r.stdout, err: r.stderr }),
    (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, out: e.stdout, err: e.stderr }),
  );

/** `NAME=value` lines of an env file; `commented` also takes the `# NAME=value` ones. */
function assignments(text: string, commented: boolean): Record<string, string> {
  const pattern = commented ? /^(?:# )?([A-Z][A-Z0-9_]*)=(.*)$/ : /^([A-Z][A-Z0-9_]*)=(.*)$/;
  return Object.fromEntries(
    text.split("\n").flatMap((line) => (pattern.exec(line) ? [[pattern.exec(line)![1]!, pattern.exec(line)![2]!]] : [])),
  );
}

let scratch: string | undefined;
afterEach(() => {
  if (scratch) rmSync(scratch, { recursive: true, force: true });
  scratch = undefined;
});

describe("npm run docs:config", () => {
  it("docs/configuration.md and .env.example say what the schemas say", () => {
    expect(driftedDocuments(root)).toEqual([]);
  });

  it("the check fails on a document that drifted, naming it, and passes again once the documents are written", async () => {
    scratch = mkdtempSync(join(tmpdir(), "config-docs-"));
    expect((await docs(scratch)).code).toBe(0);
    expect(await docs("--check", scratch)).toMatchObject({ code: 0 });

    writeFileSync(join(scratch, ".env.example"), `${readFileSync(join(scratch, ".env.example"), "utf8")}\nHOST=::\n`);
    const table = join(scratch, "docs/configuration.md");
    writeFileSync(table, readFileSync(table, "utf8").replace("| `LOG_LEVEL` | `info` |", "| `LOG_LEVEL` | `debug` |"));
    const drifted = await docs("--check", scratch);
    expect(drifted.code).toBe(1);
    expect(drifted.err).toContain(".env.example differs from the configuration schemas: run npm run docs:config");
    expect(drifted.err).toContain("docs/configuration.md differs from the configuration schemas");

    rmSync(table);
    expect(driftedDocuments(scratch).sort()).toEqual([".env.example", "docs/configuration.md"]);
    expect((await docs(scratch)).code).toBe(0);
    expect(await docs("--check", scratch)).toMatchObject({ code: 0 });
  }, 60_000);

  it("every variable of every section is in both documents once, with its description", () => {
    const { "docs/configuration.md": reference, ".env.example": sample } = configDocuments();
    const variables = variablesOf(CONFIG_SECTIONS);
    expect(variables.length).toBeGreaterThan(60);
    for (const v of variables) {
      expect(v.doc.description.length, v.name).toBeGreaterThan(20);
      expect(
        reference.split("\n").filter((l) => l.startsWith(`| \`${v.name}\``)),
        v.name,
      ).toHaveLength(1);
      expect(
        sample.split("\n").filter((l) => new RegExp(`^(# )?${v.name}=`).test(l)),
        v.name,
      ).toHaveLength(1);
      expect(reference, v.name).toContain(v.doc.description.replaceAll("|", "\\|"));
    }
    // Grouped by owner: the platform's variables, then each service's.
    expect(reference.match(/^## .*/gm)).toEqual(["## Platform", "## Identity service", "## Email service", "## Repository service"]);
  });

  it(".env.example is a valid configuration as it stands and with every sample uncommented; it sets what production needs, and no secret", () => {
    const sample = configDocuments()[".env.example"];
    const set = assignments(sample, false);
    expect(Object.keys(set).sort()).toEqual(
      [
        "HOST",
        "DATABASE_URL",
        "IDENTITY_PUBLIC_URL",
        "REPOSITORY_PUBLIC_URL",
        "EMAIL_PUBLIC_URL",
        "KEY_ENCRYPTION_KEY",
        "TRUST_PROXY",
        "METRICS_TOKEN",
        "SHUTDOWN_DELAY_MS",
      ].sort(),
    );
    // The secrets are the operator's to make: left empty, never a value someone could deploy.
    expect(set.KEY_ENCRYPTION_KEY).toBe("");
    expect(set.METRICS_TOKEN).toBe("");
    // In a container the default interface would reach nothing: the sample listens on every one, and says why.
    expect(set.HOST).toBe("0.0.0.0");
    expect(sample.replaceAll("\n# ", " ")).toMatch(
      /`127\.0\.0\.1`, accepts connections from this machine only: in a container, set `0\.0\.0\.0`/,
    );
    expect(() => loadConfig(set)).not.toThrow();
    const all = assignments(sample, true);
    expect(() => loadConfig(all)).not.toThrow();
    // Every group is there: production, security, real email, the rest.
    expect(sample.match(/^# ==== .* ====$/gm)).toEqual([
      "# ==== Required in production ====",
      "# ==== Security ====",
      "# ==== Email ====",
      "# ==== Optional ====",
    ]);
    const email = sample.slice(sample.indexOf("# ==== Email ===="), sample.indexOf("# ==== Optional ===="));
    expect(Object.keys(assignments(email, true))).toEqual([
      "IDENTITY_MAIL_EMAIL_SERVICE_URL",
      "IDENTITY_MAIL_API_KEY",
      "IDENTITY_MAIL_FROM",
      "EMAIL_SMTP_URL",
      "EMAIL_SENDING_DOMAINS",
      "EMAIL_BOUNCE_DOMAIN",
      "EMAIL_DKIM_DOMAIN",
      "EMAIL_DKIM_SELECTOR",
      "EMAIL_DKIM_PRIVATE_KEY_FILE",
    ]);
  });
});
