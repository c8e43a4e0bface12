/**
 * X-CLI-7 rb installs outside the checkout: `npm pack` in cli/ makes a tarball that a global
 * install (here into a temporary prefix) turns into a working `rb`, with nothing from the checkout:
 * no tsx, no dev dependency, no node_modules of ours. Installed and run as a user would, with the
 * machine's own Node and npm (the PATH without the Node 24 that `npm run setup` adds for the project),
 * so where that Node is older than the project's, npm must not warn EBADENGINE and rb must still run.
 * `npx rb` in the checkout must not warn either. npm runs with a cache of its own here, empty at the
 * start, as on a machine where rb was never run: npx installs the checkout into its cache the first
 * time, and that first time is when npm checks engines.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { fileURLToPath } from "node:url";
import { repositoryTarget, type RepositoryTarget } from "../../conformance/harness/targets.ts";
import { type Finished, runToEnd } from "../../support/run-to-end.ts";

const root = fileURLToPath(new URL("../..", import.meta.url));
const cliPackage = JSON.parse(readFileSync(join(root, "cli", "package.json"), "utf8"));

/** The PATH of the machine: without the project's Node 24 (node_modules/.bin, .node/bin), as setup.sh finds it. */
const machinePath = (process.env.PATH ?? "")
  .split(delimiter)
  .filter((p) => !/[/\\]node_modules[/\\]\.bin$/.test(p) && !/[/\\]\.node[/\\]bin$/.test(p))
  .join(delimiter);
let dir: string;
const machineEnv = (extra: Record<string, string> = {}) => {
  const env: Record<string, string> = {
    PATH: machinePath,
    HOME: process.env.HOME ?? tmpdir(),
    npm_config_cache: join(dir, "npm-cache"),
    ...extra,
  };
  if (process.env.TMPDIR) env.TMPDIR = process.env.TMPDIR;
  return env;
};
const machineNode = spawnSync("node", ["--version"], { env: { PATH: machinePath }, encoding: "utf8" }).stdout?.trim();

let prefix: string;
let tarball: string;
let rb: RepositoryTarget;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "rb-package-"));
  prefix = join(dir, "prefix");
  // Packed as a developer would, from the checkout (its prepack script builds dist/ with the project's tools).
  const packed = execFileSync("npm", ["pack", "--json", "--pack-destination", dir], { cwd: join(root, "cli"), encoding: "utf8" });
  tarball = join(dir, JSON.parse(packed)[0].filename);
  rb = await repositoryTarget();
}, 120_000);
afterAll(async () => {
  await rb?.close();
  rmSync(dir, { recursive: true, force: true });
});

function run(
  command: string,
  args: string[],
  env: Record<string, string>,
  { stdin = "", cwd = dir }: { stdin?: string; cwd?: string } = {},
): Promise<Finished> {
  return runToEnd(command, args, { cwd, env, stdin });
}

describe("X-CLI-7 the packed rb, installed outside the checkout", () => {
  it("X-CLI-7 the tarball holds one bundled JavaScript file, its licences and package.json, and declares no dependency", () => {
    const files = execFileSync("tar", ["-tzf", tarball], { encoding: "utf8" }).trim().split("\n").sort();
    expect(files).toEqual(["package/dist/THIRD-PARTY-LICENSES.txt", "package/dist/rb.js", "package/package.json"]);
    const manifest = JSON.parse(execFileSync("tar", ["-xzOf", tarball, "package/package.json"], { encoding: "utf8" }));
    expect(manifest).toMatchObject({ name: cliPackage.name, version: cliPackage.version, bin: { rb: "dist/rb.js" } });
    expect(manifest.dependencies).toBeUndefined();
    const bundle = execFileSync("tar", ["-xzOf", tarball, "package/dist/rb.js"], { encoding: "utf8" });
    expect(bundle.startsWith("#!/usr/bin/env node\n")).toBe(true);
    // Only Node's own modules are imported: no tsx, no TypeScript file, no package of the checkout.
    const imports = [...bundle.matchAll(/(?:^|\n)\s*import\b[^"'\n]*["']([^"']+)["']|\bimport\(\s*["']([^"']+)["']\s*\)/g)].map(
      (m) => m[1] ?? m[2],
    );
    expect(imports.filter((s) => !s!.startsWith("node:"))).toEqual([]);
  });

  it(`X-CLI-7 npm install -g of the tarball with the machine's Node (${machineNode}) warns nothing and gives a working \`rb --version\``, async () => {
    expect(machineNode, "the machine has a node on its PATH").toMatch(/^v\d+/);
    const install = await run(
      "npm",
      ["install", "--global", "--prefix", prefix, "--offline", "--no-audit", "--no-fund", tarball],
      machineEnv(),
    );
    expect(install.stderr).not.toMatch(/EBADENGINE|npm warn/i);
    expect(install.code).toBe(0);
    // Nothing but the package itself was installed: it needs no dependency.
    expect(readdirSync(join(prefix, "lib", "node_modules", ...cliPackage.name.split("/"))).sort()).toEqual(["dist", "package.json"]);

    const version = await run(join(prefix, "bin", "rb"), ["--version"], machineEnv());
    expect(version).toEqual({ code: 0, stdout: `rb ${cliPackage.version}\n`, stderr: "" });
    // npx finds the global install and runs it directly: no EBADENGINE either.
    const npx = await run("npx", ["rb", "--version"], machineEnv({ npm_config_prefix: prefix }));
    expect(npx.stderr).not.toMatch(/EBADENGINE|npm warn/i);
    expect(npx.stdout).toBe(`rb ${cliPackage.version}\n`);
  }, 120_000);

  it("X-CLI-7 the installed rb logs in to a repository service and runs a command there", async () => {
    const xdg = join(dir, "config");
    const env = machineEnv({ RB_SERVER: rb.url, XDG_CONFIG_HOME: xdg });
    const bin = join(prefix, "bin", "rb");
    const login = await run(bin, ["login", "--email", rb.user.email], env, { stdin: `${rb.user.password}\n` });
    expect(login).toMatchObject({ code: 0, stderr: "" });
    const who = await run(bin, ["whoami", "--json"], env);
    expect(who.code).toBe(0);
    expect(JSON.parse(who.stdout)).toMatchObject({ email: rb.user.email, server: rb.url });
    const repos = await run(bin, ["repo", "list", "--page", "0"], env);
    expect(repos).toMatchObject({ code: 2, stdout: "" });
  }, 60_000);

  it("X-CLI-7 `npx rb` in the checkout warns nothing when the machine's Node is older than the project's", async () => {
    const npx = await run("npx", ["rb", "--version"], machineEnv(), { cwd: root });
    expect(npx.stderr).not.toMatch(/EBADENGINE|npm warn/i);
    expect(npx).toMatchObject({ code: 0, stdout: `rb ${cliPackage.version}\n` });
  }, 120_000);
});
