/**
 * The breaking-change gate (X-API-14, scripts/api-diff.ts) on a temporary copy of the project's
 * generated documents, releases and changelog: a deliberately breaking edit fails it, the same
 * edit acknowledged in the reviewed file passes, a new major version passes with its breaking
 * changes listed, and a stale acknowledgement or changelog fails, as does a released latest version
 * whose document changed (the next release must be declared) and an older version regenerated with
 * an operation its release lacks (a missing @added). oasdiff is the real, pinned
 * tool (scripts/oasdiff.sh installs it on first use).
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

  it("X-API-14 a new major version may break: the gate passes and lists the breaking changes that ship with it", async () => {
    edit("generated/openapi/repository.yaml", (doc) => {
      requireDescription(doc);
      doc.info.version = nextMajor();
    });
    await apiDiff("changelog");
    const r = await apiDiff("check");
    expect(r.out).toContain(`repository ${nextMajor()} against release ${released}: new major version, 1 breaking change(s) ship with it`);
    expect(r.code, r.out).toBe(0);
    expect(readFileSync(join(root, "CHANGELOG.md"), "utf8")).toContain(
      `### ${nextMajor()}, not released yet (against ${released}, a new major version)`,
    );
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
    expect(r.out).toContain(`NOT VERSIONED  POST /repository/archive appears in repository ${released}: mark it @added`);
  }, 60_000);

  it("X-API-14 a changelog that is not what the documents say fails the gate", async () => {
    edit("generated/openapi/repository.yaml", (doc) => {
      doc.paths["/repository"].post.parameters = [{ name: "dryRun", in: "query", required: false, schema: { type: "boolean" } }];
    });
    const r = await apiDiff("check");
    expect(r.code).toBe(1);
    expect(r.out).toContain("CHANGELOG.md is not what the documents say now: run npm run changelog");
  }, 60_000);

  it("X-API-14 a release records the document, spends its acknowledgements, and never rewrites a released version", async () => {
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
    expect((await apiDiff("release", "repository")).code).toBe(0);
    const left = parse(readFileSync(join(root, "spec/releases/acknowledged-breaking.yaml"), "utf8")).acknowledged as { document: string }[];
    expect(left.filter((e) => e.document === "repository")).toEqual([]);
    const r = await apiDiff("check");
    expect(r.out).toContain(`repository ${nextMinor()} against its release: 0 breaking`);
    expect(r.code, r.out).toBe(0);
    expect(readFileSync(join(root, "CHANGELOG.md"), "utf8")).toContain(`### ${nextMinor()}\n\nBreaking:\n\n- \`POST /repository\``);
  }, 60_000);
});
