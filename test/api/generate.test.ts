/**
 * `npm run generate` (scripts/generate.ts) on a scratch copy of spec/ (test/api/scratch-contract.ts):
 * a spec TypeSpec refuses is the author's error, so they get TypeSpec's own diagnostics (file,
 * line, column, message) and a non-zero exit, never a Node stack trace, and generated/ is left as
 * it was.
 */
import { afterEach, describe, expect, it } from "vitest";
import { ScratchContract } from "./scratch-contract.ts";

let scratch: ScratchContract | undefined;
afterEach(() => scratch?.remove());

/** The first line of a TypeSpec source that starts with `needle`, 1-based. */
const lineOf = (text: string, needle: string) => text.split("\n").findIndex((l) => l.startsWith(needle)) + 1;

describe("npm run generate: TypeSpec's diagnostics", () => {
  it("an unknown decorator: the file, line and message TypeSpec reports, exit 1, no stack trace, generated/ unchanged", async () => {
    scratch = ScratchContract.create({ typespec: "repository" });
    const before = scratch.read("generated/openapi/repository.yaml");
    scratch.edit("spec/repository/models.tsp", (t) => t.replace(/^model Repository \{/m, "@addedd(Versions.v1_0)\nmodel Repository {"));
    const line = lineOf(scratch.read("spec/repository/models.tsp"), "@addedd");
    const r = await scratch.generate();
    expect(r.code, r.out).toBe(1);
    expect(r.out).toContain(`spec/repository/models.tsp:${line}:2 - error invalid-ref: Unknown decorator @addedd`);
    expect(r.out).toContain("TypeSpec could not compile spec/");
    expect(r.out).not.toMatch(/ at .*\.(js|ts):\d+|stdout: null|Command failed/);
    expect(scratch.read("generated/openapi/repository.yaml")).toBe(before);
  }, 180_000);

  it("an example that no longer fits its model: TypeSpec's diagnostic names the example, exit 1", async () => {
    scratch = ScratchContract.create({ typespec: "repository" });
    // The create example sends `name`; the model now calls it `repoName`.
    scratch.edit("spec/repository/models.tsp", (t) =>
      t.replace(/^(model RepositoryCreate \{[\s\S]*?\n {2})name: string;/m, "$1repoName: string;"),
    );
    const r = await scratch.generate();
    expect(r.code, r.out).toBe(1);
    expect(r.out).toMatch(/spec\/repository\/repositories\.tsp:\d+:\d+ - error /);
    expect(r.out).not.toMatch(/stdout: null|Command failed/);
  }, 180_000);
});
