/**
 * The breaking-change gate (X-API-14, scripts/api-diff.ts) after a TypeSpec edit, as a spec author
 * makes it: a scratch copy of spec/ (test/api/scratch-contract.ts, repository service only) is edited,
 * generated with the project's generate script and checked with the real, pinned oasdiff.
 *
 * - A response property added without `@added` shows in the regenerated older version: the gate
 *   fails on it as on an operation without `@added`.
 * - A new major version that changes an operation on the paths its last release serves fails: a
 *   2.0 serves what it changes under `/v2` beside them (spec/README.md).
 * - The worked example of a repository 2.0 in spec/README.md compiles, passes the gate, and the
 *   changelog says what changes for a client that moves to `/v2`.
 */
import { execFile } from "node:child_process";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { promisify } from "node:util";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { ScratchContract } from "./scratch-contract.ts";

const run = promisify(execFile);
let scratch: ScratchContract | undefined;

beforeAll(async () => {
  await run("bash", ["scripts/oasdiff.sh", "--path"]); // the first run on a fresh clone builds it (about 90 s)
}, 300_000);
afterEach(() => scratch?.remove());

/** The repository service's `Versions` members, oldest first, as `[member, version]`. */
const versionsOf = (mainTsp: string): Array<[string, string]> => {
  const body = /enum Versions \{([\s\S]*?)\n\}/.exec(mainTsp)?.[1] ?? "";
  return [...body.matchAll(/^\s*(v\w+): "([\d.]+)",?$/gm)].map((m) => [m[1]!, m[2]!]);
};

/** Declares a new last member of the repository service's `Versions`. */
const declareVersion = (s: ScratchContract, member: string, version: string) =>
  s.edit("spec/repository/main.tsp", (t) => t.replace(/(enum Versions \{[\s\S]*?)\n\}/, `$1\n\n  ${member}: "${version}",\n}`));

/** The repository's last release (spec/releases/repository/<version>.yaml). */
const lastRelease = (s: ScratchContract): string =>
  readdirSync(s.path("spec/releases/repository"))
    .map((f) => f.replace(/\.yaml$/, ""))
    .sort((a, b) => a.localeCompare(b, "en", { numeric: true }))
    .at(-1)!;

/** Lets spec/repository/models.tsp use @added and @renamedFrom (it imports @typespec/versioning). */
const useVersioning = (s: ScratchContract) => {
  if (s.read("spec/repository/models.tsp").includes("using Versioning;")) return;
  s.edit("spec/repository/models.tsp", (t) =>
    t
      .replace('import "@typespec/http";', 'import "@typespec/http";\nimport "@typespec/versioning";')
      .replace("using Http;", "using Http;\nusing Versioning;"),
  );
};

/** The worked example of spec/README.md: the fenced block that starts with `// spec/repository/v2.tsp`. */
function workedExample(): string {
  const readme = readFileSync("spec/README.md", "utf8");
  const block = /```typespec\n(\/\/ spec\/repository\/v2\.tsp[\s\S]*?)```/.exec(readme)?.[1];
  if (!block) throw new Error("spec/README.md has no ```typespec block starting with // spec/repository/v2.tsp");
  return block;
}

/** A new major above the repository's last declared version: 2.0.0 today. */
function nextMajor(s: ScratchContract): string {
  const last = versionsOf(s.read("spec/repository/main.tsp")).at(-1)![1];
  return `${Number(last.split(".")[0]) + 1}.0.0`;
}

describe("breaking-change gate after a TypeSpec edit", () => {
  it("X-API-14 a response property added without @added fails: it appears in the regenerated older version, which must equal its release", async () => {
    scratch = ScratchContract.create({ typespec: "repository" });
    scratch.edit("spec/repository/models.tsp", (t) =>
      t.replace(/(model Repository \{\n)/, "$1  /** Topics, for search. */\n  topics?: string[];\n\n"),
    );
    expect((await scratch.generate()).code).toBe(0);
    await scratch.apiDiff("changelog");
    const r = await scratch.apiDiff("check");
    expect(r.code, r.out).toBe(1);
    expect(r.out).toMatch(
      /NOT VERSIONED {2}response-optional-property-added {2}GET \/repository\/\{repositoryId\}: .*`topics`.* \(in 1\.0\.0\)/,
    );
    expect(r.out).toContain("mark it @added(Versions.");
  }, 300_000);

  it("X-API-14 the same property marked @added with the version being written passes the older versions' check", async () => {
    scratch = ScratchContract.create({ typespec: "repository" });
    const [member, version] = versionsOf(scratch.read("spec/repository/main.tsp")).at(-1)!;
    // The property is new in the version being written; if the last one is released, the next one.
    const released = version === lastRelease(scratch);
    if (released) declareVersion(scratch, "v1_99", "1.99.0");
    const adding = released ? "v1_99" : member;
    useVersioning(scratch);
    scratch.edit("spec/repository/models.tsp", (t) =>
      t.replace(/(model Repository \{\n)/, `$1  /** Topics, for search. */\n  @added(Versions.${adding})\n  topics?: string[];\n\n`),
    );
    expect((await scratch.generate()).code).toBe(0);
    await scratch.apiDiff("changelog");
    const r = await scratch.apiDiff("check");
    expect(r.out).not.toMatch(/NOT VERSIONED {2}\S+ {2}/); // no finding line (the legend names the label)
    expect(r.code, r.out).toBe(0);
  }, 300_000);

  it("X-API-14 a new major version that renames a request field on a path its last release serves fails: 2.0 lives under /v2", async () => {
    scratch = ScratchContract.create({ typespec: "repository" });
    const major = nextMajor(scratch);
    declareVersion(scratch, "v2_0", major);
    scratch.edit("spec/repository/models.tsp", (t) =>
      t.replace(/^(model RepositoryCreate \{[\s\S]*?\n {2})name: string;/m, '$1@renamedFrom(Versions.v2_0, "name")\n  repoName: string;'),
    );
    useVersioning(scratch);
    scratch.edit("spec/repository/repositories.tsp", (t) =>
      t.replace('body: #{ name: "web-frontend"', 'body: #{ repoName: "web-frontend"'),
    );
    const generated = await scratch.generate();
    expect(generated.code, generated.out).toBe(0);
    expect(parse(scratch.read("generated/openapi/repository.yaml")).info.version).toBe(major);
    await scratch.apiDiff("changelog");
    const r = await scratch.apiDiff("check");
    expect(r.code, r.out).toBe(1);
    expect(r.out).toMatch(/BREAKING {2}new-required-request-property {2}POST \/repository: .*`repoName`/);
    expect(r.out).toContain(`repository: ${major} changes 1 operation(s) that release 1.`);
    expect(r.out).toContain("serves what it changes under /v2/");
  }, 300_000);

  it("X-API-14 the worked example of a repository 2.0 in spec/README.md passes: 1.x paths as released, POST /v2/repository beside them", async () => {
    scratch = ScratchContract.create({ typespec: "repository" });
    const major = nextMajor(scratch);
    declareVersion(scratch, "v2_0", major);
    writeFileSync(scratch.path("spec/repository/v2.tsp"), workedExample());
    scratch.edit("spec/repository/main.tsp", (t) => t.replace('import "./agents.tsp";', 'import "./agents.tsp";\nimport "./v2.tsp";'));
    const generated = await scratch.generate();
    expect(generated.code, generated.out).toBe(0);
    const served = parse(scratch.read("generated/openapi/repository.yaml"));
    expect(served.info.version).toBe(major);
    expect(Object.keys(served.paths)).toEqual(expect.arrayContaining(["/repository", "/v2/repository"]));
    await scratch.apiDiff("changelog");
    const r = await scratch.apiDiff("check");
    expect(r.out).toContain(`repository ${major} against release 1.`);
    expect(r.code, r.out).toBe(0);
    // What a client that moves from POST /repository to POST /v2/repository must change.
    const changelog = scratch.read("CHANGELOG.md");
    expect(changelog).toContain(`### ${major}, not released yet`);
    expect(changelog).toMatch(/For a client that moves to `\/v2`[\s\S]*`POST \/v2\/repository` \(was `POST \/repository`\): .*`repoName`/);
  }, 300_000);
});
