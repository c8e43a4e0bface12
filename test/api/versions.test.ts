/**
 * The breaking-change gate (X-API-14, scripts/api-diff.ts) on a temporary copy of the project's
 * generated documents, releases and changelog: a deliberately breaking edit fails it, the same
 * edit acknowledged in the reviewed file passes, a new major version that breaks a path its last
 * release serves fails, a stale acknowledgement or changelog fails, as does a released latest
 * version whose document changed (the next release must be declared) and an older version
 * regenerated with an operation its release lacks (a missing @added). Removing an optional field of
 * a sealed request body is breaking. Each finding is printed once. The changelog groups repeats,
 * dates releases and gives the acknowledgements' reasons; `diff` writes it as Markdown or HTML;
 * `release` leaves the acknowledgements file as it was but for the released entries' mark.
 * oasdiff is the real, pinned tool (scripts/oasdiff.sh installs it on first use). TypeSpec-level
 * cases: test/api/versions-typespec.test.ts.
 */
import { execFile } from "node:child_process";
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { parse, stringify } from "yaml";

const run = promisify(execFile);
const compareVersions = (a: string, b: string) => {
  const [pa, pb] = [a, b].map((v) => v.split(".").map(Number));
  return pa!.map((n, i) => n - pb![i]!).find((d) => d !== 0) ?? 0;
};
let root: string;

/** Runs the gate (or another command) on the copy: exit code and everything it printed. */
async function apiDiff(...args: string[]): Promise<{ code: number; out: string }> {
  try {
    const r = await run(process.execPath, ["--import", "tsx", "scripts/api-diff.ts", "--root", root, ...args], {
      maxBuffer: 16 * 1024 * 1024,
    });
    return { code: 0, out: r.stdout + r.stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, out: e.stdout + e.stderr };
  }
}

/** Edits a YAML file of the copy in place. */
function edit(relativePath: string, change: (doc: any) => void): void {
  const file = join(root, relativePath);
  const doc = parse(readFileSync(file, "utf8"));
  change(doc);
  writeFileSync(file, stringify(doc, { lineWidth: 0 }));
}

/** The breaking edit: `description`, optional so far, becomes required in `POST /repository`. */
const requireDescription = (doc: any) => doc.components.schemas.RepositoryCreate.required.push("description");

/** The repository document's last release, and the version generated now (the same, or one not released yet). */
let released: string;
let current: string;
/** How the gate names the comparison of the current repository document. */
const currentLabel = () => `repository ${current} against ${current === released ? "its release" : `release ${released}`}`;

const nextMajor = () => `${Number(released.split(".")[0]) + 1}.0.0`;
/** A minor version above both the release and what is generated now. */
const nextMinor = () => {
  const [major, minor] = [released, current].sort(compareVersions).at(-1)!.split(".").map(Number);
  return `${major}.${minor! + 1}.0`;
};

// Added to the entries the project has acknowledged already (they must keep matching).
const acknowledge = (entries: object[]) =>
  edit("spec/releases/acknowledged-breaking.yaml", (d) => (d.acknowledged = [...(d.acknowledged ?? []), ...entries]));

beforeAll(async () => {
  await run("bash", ["scripts/oasdiff.sh", "--path"]); // the first run on a fresh clone builds it (about 90 s)
}, 300_000);

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), "api-diff-"));
  cpSync("generated/openapi", join(root, "generated/openapi"), { recursive: true });
  cpSync("spec/releases", join(root, "spec/releases"), { recursive: true });
  cpSync("CHANGELOG.md", join(root, "CHANGELOG.md"));
  released = readdirSync(join(root, "spec/releases/repository"))
    .map((f) => f.replace(/\.yaml$/, ""))
    .sort(compareVersions)
    .at(-1)!;
  current = parse(readFileSync(join(root, "generated/openapi/repository.yaml"), "utf8")).info.version;
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

describe("breaking-change gate (oasdiff against spec/releases/)", () => {
  it("X-API-14 the project as committed passes: every document equals or extends its release, and CHANGELOG.md is current", async () => {
    const r = await apiDiff("check");
    expect(r.out).toContain(`${currentLabel()}: 0 breaking`);
    expect(r.code, r.out).toBe(0);
  }, 60_000);

  it("X-API-14 a breaking edit within the released major version fails the gate, naming the check, the operation and what to do", async () => {
    edit("generated/openapi/repository.yaml", requireDescription);
    await apiDiff("changelog"); // the changelog is current: the failure is the breaking change alone
    const r = await apiDiff("check");
    expect(r.code).toBe(1);
    expect(r.out).toMatch(/BREAKING {2}request-property-became-required-with-default {2}POST \/repository: .*description/);
    expect(r.out).toContain(`repository: 1 unacknowledged breaking change(s) against ${released}`);
    expect(r.out).toContain("acknowledged-breaking.yaml");
  }, 60_000);

  it("X-API-14 the same edit acknowledged in spec/releases/acknowledged-breaking.yaml passes; the changelog lists it as breaking", async () => {
    edit("generated/openapi/repository.yaml", requireDescription);
    acknowledge([
      {
        document: "repository",
        id: "request-property-became-required-with-default",
        operation: "POST /repository",
        text: "description",
        reason: "Test: the service has always refused an empty description.",
      },
    ]);
    await apiDiff("changelog");
    const r = await apiDiff("check");
    expect(r.out).toContain(`${currentLabel()}: 1 breaking (1 acknowledged)`);
    expect(r.code, r.out).toBe(0);
    const changelog = readFileSync(join(root, "CHANGELOG.md"), "utf8");
    expect(changelog).toMatch(/Breaking:\n\n- `POST \/repository`: .*description.*\(`request-property-became-required-with-default`\)/);
  }, 60_000);

  it("X-API-14 an acknowledgement that matches no breaking change fails, so the reviewed file never says more than is true", async () => {
    acknowledge([
      {
        document: "email",
        id: "api-path-removed-without-deprecation",
        operation: "GET /v1/emails/{id}",
        reason: "Test: nothing like this happened.",
      },
    ]);
    const r = await apiDiff("check");
    expect(r.code).toBe(1);
    expect(r.out).toContain("matches no breaking change: remove it");
  }, 60_000);

  it("X-API-14 a new major version that breaks an operation its last release serves fails: what 2.0 changes lives under /v2", async () => {
    edit("generated/openapi/repository.yaml", (doc) => {
      requireDescription(doc);
      doc.info.version = nextMajor();
    });
    await apiDiff("changelog");
    const r = await apiDiff("check");
    expect(r.code, r.out).toBe(1);
    expect(r.out).toMatch(/BREAKING {2}request-property-became-required-with-default {2}POST \/repository: .*description/);
    expect(r.out).toContain(`repository: ${nextMajor()} changes 1 operation(s) that release ${released} serves (POST /repository)`);
    expect(r.out).toContain("serves what it changes under /v2/");
  }, 60_000);

  it("X-API-14 removing an optional property of a sealed request body is breaking: a client that still sends it gets 400", async () => {
    edit("generated/openapi/repository.yaml", (doc) => delete doc.components.schemas.RepositoryCreate.properties.defaultBranch);
    await apiDiff("changelog");
    const r = await apiDiff("check");
    expect(r.code, r.out).toBe(1);
    expect(r.out).toMatch(
      /BREAKING {2}request-property-removed {2}POST \/repository: removed the request property `defaultBranch` \(the request body is sealed/,
    );
  }, 60_000);

  it("X-API-14 removing an optional property of a request body that takes unknown fields is only to check", async () => {
    edit("generated/openapi/repository.yaml", (doc) => {
      delete doc.components.schemas.RepositoryCreate.properties.defaultBranch;
      delete doc.components.schemas.RepositoryCreate.additionalProperties;
    });
    await apiDiff("changelog");
    const r = await apiDiff("check");
    expect(r.out).toMatch(/check {2}request-property-removed {2}POST \/repository: removed the request property `defaultBranch`/);
    expect(r.code, r.out).toBe(0);
  }, 60_000);

  it("X-API-14 each finding is printed once, naming the versions it shows in, and the console says what BREAKING and check mean", async () => {
    cpSync(join(root, `spec/releases/repository/${released}.yaml`), join(root, `generated/openapi/versions/repository/${released}.yaml`));
    edit(`generated/openapi/versions/repository/${released}.yaml`, requireDescription);
    if (current === released) edit("generated/openapi/repository.yaml", (doc) => (doc.info.version = nextMinor()));
    edit("generated/openapi/repository.yaml", requireDescription);
    await apiDiff("changelog");
    const r = await apiDiff("check");
    expect(r.code).toBe(1);
    const lines = r.out.split("\n").filter((l) => l.includes("BREAKING  request-property-became-required-with-default"));
    expect(lines, r.out).toHaveLength(1);
    expect(lines[0]).toMatch(new RegExp(`\\(in ${released.replaceAll(".", "\\.")} and `));
    expect(r.out).toMatch(/check +may break some clients.*does not fail/);
    expect(r.out).toMatch(/BREAKING +breaks clients of the release/);
  }, 60_000);

  it("X-API-14 a released version that the spec still declares (generated/openapi/versions/) must not break against its own snapshot", async () => {
    // An older version regenerated from today's TypeSpec: the @added/@removed marks must reproduce it.
    cpSync(join(root, `spec/releases/repository/${released}.yaml`), join(root, `generated/openapi/versions/repository/${released}.yaml`));
    edit(`generated/openapi/versions/repository/${released}.yaml`, requireDescription);
    edit("generated/openapi/repository.yaml", (doc) => (doc.info.version = nextMajor()));
    await apiDiff("changelog");
    const r = await apiDiff("check");
    expect(r.code).toBe(1);
    expect(r.out).toContain(`repository ${released} against its release: 1 breaking (0 acknowledged)`);
  }, 60_000);

  it("X-API-14 a released latest version whose document changed fails: the next release must be declared as a Versions member", async () => {
    // The repository document as if its last release were the latest version, plus one additive change.
    rmSync(join(root, "generated/openapi/versions/repository"), { recursive: true, force: true });
    cpSync(join(root, `spec/releases/repository/${released}.yaml`), join(root, "generated/openapi/repository.yaml"));
    edit("generated/openapi/repository.yaml", (doc) => {
      doc.paths["/repository"].post.parameters = [{ name: "dryRun", in: "query", required: false, schema: { type: "boolean" } }];
    });
    await apiDiff("changelog");
    const r = await apiDiff("check");
    expect(r.code).toBe(1);
    expect(r.out).toContain(`repository: ${released} is released and generated/openapi/repository.yaml differs from it (1 change(s))`);
    expect(r.out).toContain("declare the next release as the last `Versions` member");
  }, 60_000);

  it("X-API-14 an older released version regenerated with an operation its release lacks fails: the operation needs @added", async () => {
    cpSync(join(root, `spec/releases/repository/${released}.yaml`), join(root, `generated/openapi/versions/repository/${released}.yaml`));
    edit(`generated/openapi/versions/repository/${released}.yaml`, (doc) => {
      doc.paths["/repository/archive"] = { post: { operationId: "archiveAll", responses: { "204": { description: "Archived." } } } };
    });
    if (current === released) edit("generated/openapi/repository.yaml", (doc) => (doc.info.version = nextMinor()));
    await apiDiff("changelog");
    const r = await apiDiff("check");
    expect(r.code).toBe(1);
    expect(r.out).toMatch(
      new RegExp(`NOT VERSIONED {2}endpoint-added {2}POST /repository/archive: .* \\(in ${released.replaceAll(".", "\\.")}\\)`),
    );
    expect(r.out).toContain(`repository: ${released}, regenerated, differs from its release by what TypeSpec marks per version`);
    expect(r.out).toContain("mark it @added(Versions.");
  }, 60_000);

  it("X-API-14 a changelog that is not what the documents say fails the gate", async () => {
    edit("generated/openapi/repository.yaml", (doc) => {
      doc.paths["/repository"].post.parameters = [{ name: "dryRun", in: "query", required: false, schema: { type: "boolean" } }];
    });
    const r = await apiDiff("check");
    expect(r.code).toBe(1);
    expect(r.out).toContain("CHANGELOG.md is not what the documents say now: run npm run changelog");
  }, 60_000);

  it("X-API-14 a release records the document, marks its acknowledgements with the release, and never rewrites a released version", async () => {
    edit("generated/openapi/repository.yaml", (doc) => {
      requireDescription(doc);
      doc.info.version = released;
    });
    acknowledge([
      {
        document: "repository",
        id: "request-property-became-required-with-default",
        operation: "POST /repository",
        reason: "Test: the service has always refused an empty description.",
      },
    ]);
    const again = await apiDiff("release", "repository");
    expect(again.code).toBe(1);
    expect(again.out).toContain(`repository ${released} is released with other content: a released version never changes`);
    edit("generated/openapi/repository.yaml", (doc) => (doc.info.version = nextMinor()));
    expect((await apiDiff("release", "repository", "--date", "2026-12-24")).code).toBe(0);
    const entries = parse(readFileSync(join(root, "spec/releases/acknowledged-breaking.yaml"), "utf8")).acknowledged as {
      document: string;
      release?: string;
    }[];
    expect(entries.filter((e) => e.document === "repository").map((e) => e.release)).toEqual([nextMinor()]);
    const r = await apiDiff("check");
    expect(r.out).toContain(`repository ${nextMinor()} against its release: 0 breaking`);
    expect(r.code, r.out).toBe(0);
    expect(readFileSync(join(root, "CHANGELOG.md"), "utf8")).toContain(
      `### ${nextMinor()} (released 2026-12-24)\n\nBreaking:\n\n- \`POST /repository\``,
    );
  }, 60_000);

  it("X-API-14 release leaves acknowledged-breaking.yaml byte for byte but for one `release:` line per released entry, and the gate still passes", async () => {
    const file = join(root, "spec/releases/acknowledged-breaking.yaml");
    const before = readFileSync(file, "utf8");
    const identity = parse(readFileSync(join(root, "generated/openapi/identity.yaml"), "utf8")).info.version as string;
    const r = await apiDiff("release", "identity", "--date", "2026-12-24");
    expect(r.code, r.out).toBe(0);
    const after = readFileSync(file, "utf8");
    const added = after.split("\n").filter((l) => !before.split("\n").includes(l));
    expect(added).toEqual([`    release: ${identity}`]);
    expect(after.replace(`    release: ${identity}\n`, "")).toBe(before);
    // The regenerated older identity still shows the acknowledged change: the marked entry covers it.
    const gate = await apiDiff("check");
    expect(gate.code, gate.out).toBe(0);
    const changelog = readFileSync(join(root, "CHANGELOG.md"), "utf8");
    expect(changelog).toMatch(
      new RegExp(`### ${identity.replaceAll(".", "\\.")} \\(released 2026-12-24\\)\n\nBreaking:[\\s\\S]*Acknowledged: Issue 12`),
    );
  }, 60_000);

  it("X-API-14 CHANGELOG.md groups a repeated finding in one line, dates each release and gives each acknowledgement's reason", async () => {
    await apiDiff("changelog");
    const changelog = readFileSync(join(root, "CHANGELOG.md"), "utf8");
    expect(changelog).toMatch(/### 1\.0\.0 \(released 2026-11-23\)/);
    // oasdiff reports the `code` enum once per error response of each operation: one line here.
    const enumLines = changelog.split("\n").filter((l) => l.startsWith("- ") && l.includes("response-property-became-enum"));
    const sections = changelog.split("\n").filter((l) => l.startsWith("### ") && l.includes("not released yet"));
    expect(enumLines.length).toBeLessThanOrEqual(sections.length);
    expect(enumLines.join("\n")).toMatch(
      /the `code` response property was restricted to a list of enum values: \d+ error responses \(.*\) of \d+ operations/,
    );
    expect(changelog).toContain("Acknowledged: Issue 12 (SDK-ready documents)");
    expect(changelog.split("\n").filter((l) => l.startsWith("- ")).length).toBeLessThan(60);
  }, 60_000);

  it("X-API-14 diff --format markdown|html: what is not released yet, grouped, with the reasons, ready for a pull-request comment", async () => {
    const markdown = await apiDiff("diff", "--format", "markdown");
    expect(markdown.code, markdown.out).toBe(0);
    expect(markdown.out).toMatch(/^## API contract changes/m);
    expect(markdown.out).toMatch(/^### Identity Service \(`identity`\) .* against release 1\.0\.0/m);
    expect(markdown.out).toContain("Acknowledged: Issue 12 (SDK-ready documents)");
    expect(markdown.out).toMatch(/restricted to a list of enum values: \d+ error responses/);
    const html = await apiDiff("diff", "--format", "html");
    expect(html.code, html.out).toBe(0);
    expect(html.out).toMatch(/<h2>API contract changes<\/h2>/);
    expect(html.out).toContain("<code>AdminAuth</code>");
    expect(html.out).toContain("Acknowledged: Issue 12 (SDK-ready documents)");
    expect(html.out).not.toMatch(/`|^#/m);
  }, 60_000);

  it("X-API-14 diff --base <git ref>: only what changed since that commit", async () => {
    const git = (...args: string[]) => run("git", ["-C", root, "-c", "user.name=t", "-c", "user.email=t@example.com", ...args]);
    await git("init", "-q");
    await git("add", "generated");
    await git("commit", "-qm", "base");
    edit("generated/openapi/repository.yaml", (doc) => {
      doc.paths["/repository"].post.parameters = [{ name: "dryRun", in: "query", required: false, schema: { type: "boolean" } }];
    });
    const r = await apiDiff("diff", "--base", "HEAD", "--format", "markdown");
    expect(r.code, r.out).toBe(0);
    expect(r.out).toMatch(/### Repository and Build Service \(`repository`\) .* against HEAD/);
    expect(r.out).toContain("`dryRun`");
    expect(r.out).not.toContain("Identity Service");
  }, 60_000);
});
