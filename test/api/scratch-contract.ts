/**
 * A scratch copy of the contract pipeline, for the tests of `npm run generate` and of the
 * breaking-change gate (X-API-14): spec/, the generate script, the generated documents,
 * spec/releases/ and CHANGELOG.md in a temporary folder, so a test edits TypeSpec or YAML there and
 * runs the project's own scripts on it, never on the project's spec/ or generated/.
 *
 * `typespec: "repository"` compiles only the shared models and the repository service (a third of
 * the time of the whole spec): the other documents stay as the project generated them.
 */
import { execFile } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify, stripVTControlCharacters } from "node:util";
import { parse, stringify } from "yaml";

const run = promisify(execFile);
const project = resolve(import.meta.dirname, "../..");

export type Ran = { code: number; out: string };

/**
 * Runs a script of the project; its output without terminal colours, which TypeSpec's compiler turns
 * on where it guesses a CI log (CI=true) even with no terminal.
 */
async function node(args: string[], cwd: string): Promise<Ran> {
  try {
    const r = await run(process.execPath, ["--import", "tsx", ...args], { cwd, maxBuffer: 64 * 1024 * 1024 });
    return { code: 0, out: stripVTControlCharacters(r.stdout + r.stderr) };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, out: stripVTControlCharacters(e.stdout + e.stderr) };
  }
}

export class ScratchContract {
  private constructor(
    readonly root: string,
    private readonly only: "repository" | undefined,
  ) {}

  static create(options: { typespec?: "repository" } = {}): ScratchContract {
    const root = mkdtempSync(join(tmpdir(), "contract-"));
    for (const path of ["spec", "generated/openapi", "tspconfig.yaml", "package.json", "CHANGELOG.md"])
      cpSync(join(project, path), join(root, path), { recursive: true });
    mkdirSync(join(root, "scripts"));
    for (const script of ["generate.ts", "sdk-document.ts"]) cpSync(join(project, "scripts", script), join(root, "scripts", script));
    // TypeSpec resolves its libraries, and the scripts their packages, from the project's node_modules.
    symlinkSync(join(project, "node_modules"), join(root, "node_modules"));
    if (options.typespec === "repository")
      writeFileSync(join(root, "spec/main.tsp"), 'import "./shared/main.tsp";\nimport "./repository/main.tsp";\n');
    return new ScratchContract(root, options.typespec);
  }

  path(relative: string): string {
    return join(this.root, relative);
  }

  read(relative: string): string {
    return readFileSync(this.path(relative), "utf8");
  }

  /** Edits a text file of the copy (a TypeSpec source); fails when the edit changes nothing. */
  edit(relative: string, change: (text: string) => string): void {
    const before = this.read(relative);
    const after = change(before);
    if (after === before) throw new Error(`the edit of ${relative} changed nothing: the test no longer fits the spec`);
    writeFileSync(this.path(relative), after);
  }

  /** Edits a YAML file of the copy as data. */
  editYaml(relative: string, change: (doc: any) => void): void {
    const doc = parse(this.read(relative));
    change(doc);
    writeFileSync(this.path(relative), stringify(doc, { lineWidth: 0 }));
  }

  /** `npm run generate` on the copy: its own script, its own spec/, writing its own generated/. */
  async generate(): Promise<Ran> {
    const r = await node([join(this.root, "scripts/generate.ts")], project);
    if (r.code === 0 && this.only) {
      // Only the repository service was compiled: the other documents are the project's.
      for (const file of ["identity", "identity-webhooks", "email", "email-webhooks"].flatMap((doc) => [
        `generated/openapi/${doc}.yaml`,
        `generated/openapi/versions/${doc}`,
      ])) {
        if (existsSync(join(project, file))) cpSync(join(project, file), this.path(file), { recursive: true });
      }
    }
    return r;
  }

  /** scripts/api-diff.ts (the project's) on the copy: `check`, `changelog`, `release <doc>`, `diff`. */
  apiDiff(...args: string[]): Promise<Ran> {
    return node(["scripts/api-diff.ts", "--root", this.root, ...args], project);
  }

  remove(): void {
    rmSync(this.root, { recursive: true, force: true });
  }
}
