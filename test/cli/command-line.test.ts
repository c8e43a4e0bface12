/**
 * X-CLI-1 for every command at once: each mistake on the command line is a usage error (exit 2) in
 * rb's own words, found before any request. The cases are made from the command table itself, so a
 * command or option added later is covered with no new test. `main` runs in this process against a
 * recording HTTP server, with a stored login and an agent token for that server, so that a command
 * that got past its checks would make a request; the control cases show that it does.
 * Also the help topics and the version (X-CLI-6).
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createServer, type Server } from "node:http";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AddressInfo } from "node:net";
import { main } from "../../cli/main.ts";
import { type Command, optionsOf, usageOf } from "../../cli/command.ts";
import { COMMANDS } from "../../cli/command-table.ts";
import { commandHelp } from "../../cli/help.ts";
import { ConfigStore } from "../../cli/config-store.ts";
import { OPTIONS } from "../../cli/options.ts";

let server: Server;
let url: string;
const requests: string[] = [];
let xdg: string;

beforeAll(async () => {
  // Every answer is a 503 problem: no refresh is attempted and nothing is stored, so each case starts alike.
  server = createServer((req, res) => {
    requests.push(`${req.method} ${req.url}`);
    res.writeHead(503, { "content-type": "application/problem+json" });
    res.end(JSON.stringify({ type: "about:blank", title: "Unavailable", status: 503, detail: "Recorded.", code: "unavailable" }));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  xdg = mkdtempSync(join(tmpdir(), "rb-cli-line-"));
});
afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
  rmSync(xdg, { recursive: true, force: true });
});

/** A login for the recording server that needs no refresh, and an agent of its own. */
function storeLoginAndAgent() {
  const expiresAt = new Date(Date.now() + 3600_000).toISOString();
  new ConfigStore(join(xdg, "rb", "config.json")).save({
    server: url,
    email: "ada@example.com",
    tokens: { accessToken: "access", refreshToken: "refresh", expiresAt },
    agent: { id: "a1", name: "ci", agentToken: "agent", expiresAt, server: url },
  });
}

beforeEach(() => {
  requests.length = 0;
  storeLoginAndAgent();
});

async function rb(argv: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(argv, { out: (t) => out.push(t), err: (t) => err.push(t) }, { XDG_CONFIG_HOME: xdg, RB_SERVER: url });
  return { code, stdout: out.join("\n"), stderr: err.join("\n") };
}

/** Arguments a command takes, valid as far as the command line goes (UUIDs need no lookup). */
const validArgs = (c: Command) =>
  c.args
    .filter((a) => !a.optionalWords)
    .map((a) => (a.choices ? a.choices[0]! : a.name === "name" ? "ci" : "00000000-0000-4000-8000-000000000001"));

interface Case {
  argv: string[];
  stderr: RegExp;
}

/** Every mistake the table allows for one command. */
function mistakes(c: Command): Case[] {
  const args = validArgs(c);
  const cases: Case[] = [
    { argv: [...c.words, ...args, "--bogus"], stderr: /^Unknown option --bogus\. Usage: / },
    { argv: [...c.words, ...args, "--pagesize", "3"], stderr: /^Unknown option --pagesize\. Did you mean --page-size\?/ },
    { argv: [...c.words, ...args, "-x"], stderr: /^Unknown option -x\./ },
    { argv: [...c.words, ...args, "--json=yes"], stderr: /^--json takes no value/ },
    { argv: [...c.words, ...args, "--server"], stderr: /^--server needs a value: --server URL\.$/ },
    { argv: [...c.words, ...args, "--server", "--json"], stderr: /^--server needs a value: --server URL \(a value that starts with "-"/ },
  ];
  const foreign = OPTIONS.find((o) => !optionsOf(c).includes(o.name))!;
  cases.push({
    argv: [...c.words, ...args, `--${foreign.name}`, ...(foreign.value ? ["1"] : [])],
    stderr: new RegExp(`^\`rb ${c.words.join(" ")}\` has no --${foreign.name} option\\. Usage: `),
  });
  if (!c.args.some((a) => a.optionalWords))
    cases.push({ argv: [...c.words, ...args, "extra"], stderr: /^Unexpected argument "extra"\. Usage: / });
  if (args.length) cases.push({ argv: [...c.words, ...args.slice(0, -1)], stderr: /^Missing argument\. Usage: / });
  c.args.forEach((a, i) => {
    if (!a.choices) return;
    const wrong = [...args];
    wrong[i] = "maybe";
    cases.push({
      argv: [...c.words, ...wrong],
      stderr: new RegExp(`^The ${a.name} must be ${a.choices.map((x) => `"${x}"`).join(" or ")}, not "maybe"`),
    });
  });
  for (const name of c.options) {
    const spec = OPTIONS.find((o) => o.name === name)!;
    if (!spec.parse) continue;
    for (const bad of ["0", "abc", "1.5", "1e2", "", "1000001", "-1"]) {
      cases.push({
        argv: [...c.words, ...args, `--${name}=${bad}`],
        stderr: new RegExp(`^--${name} must be a whole number from 1 to \\d+, not "${bad.replace(".", "\\.")}"`),
      });
    }
    if (name === "page-size")
      cases.push({ argv: [...c.words, ...args, "--page-size", "101"], stderr: /^--page-size must be a whole number from 1 to 100/ });
  }
  return cases;
}

describe("X-CLI-1 a mistake on the command line is a usage error (exit 2) in rb's own words, before any request", () => {
  for (const c of COMMANDS) {
    it(`X-CLI-1 rb ${c.words.join(" ")}: ${mistakes(c).length} mistakes, each exit 2 with no request`, async () => {
      for (const { argv, stderr } of mistakes(c)) {
        const res = await rb(argv);
        expect({ argv, code: res.code, stderr: res.stderr, requests }).toMatchObject({ argv, code: 2, requests: [] });
        expect(res.stderr, `rb ${argv.join(" ")}`).toMatch(stderr);
        // Never Node's parseArgs wording.
        expect(res.stderr).not.toMatch(/ERR_PARSE_ARGS|To specify a positional argument|'--/);
        expect(res.stdout).toBe("");
      }
    });
  }

  it("X-CLI-1 the reported cases: `rb repo list --page 0`, `--page abc`, `--page-size 101` and `rb agent list --page 0` exit 2, and no request is made", async () => {
    for (const argv of [
      ["repo", "list", "--page", "0"],
      ["repo", "list", "--page", "abc"],
      ["repo", "list", "--page-size", "101"],
      ["agent", "list", "--page", "0"],
      ["build", "list", "web", "--page", "0"],
    ]) {
      const res = await rb(argv);
      expect(res.code).toBe(2);
      expect(res.stderr).toMatch(/^--page(-size)? must be a whole number from 1 to \d+, not "/);
      expect(res.stderr).not.toMatch(/Cannot reach/);
    }
    expect(requests).toEqual([]);
  });

  it("X-CLI-1 control: with valid arguments every command that talks to the server does make a request", async () => {
    for (const c of COMMANDS) {
      if (c.local || c.words[0] === "login") continue; // login reads its password from stdin
      requests.length = 0;
      storeLoginAndAgent(); // `rb logout` forgot them
      const res = await rb([...c.words, ...validArgs(c)]);
      expect({ command: c.words.join(" "), requests: requests.length > 0, code: res.code }).toEqual({
        command: c.words.join(" "),
        requests: true,
        code: 1,
      });
    }
  });

  it("X-CLI-1 an unknown command, a group without its subcommand, and options before the command are usage errors too", async () => {
    expect(await rb(["deploy"])).toMatchObject({ code: 2, stderr: 'Unknown command "deploy". Run `rb help` for usage.' });
    expect((await rb(["repo"])).stderr).toMatch(/^`rb repo` needs a subcommand\. Usage:\n {2}rb repo list/);
    expect((await rb(["repo", "delete"])).stderr).toMatch(/^Unknown command "rb repo delete"\. Usage:/);
    expect(await rb(["--bogus"])).toMatchObject({ code: 2, stderr: "Unknown option --bogus. Run `rb help` for usage." });
    expect(await rb(["--page", "0", "repo", "list"])).toMatchObject({
      code: 2,
      stderr: '--page must be a whole number from 1 to 1000000, not "0".',
    });
    expect(requests).toEqual([]);
  });
});

describe("X-CLI-6 help topics and the version", () => {
  it("X-CLI-6 `rb help <command>` prints that command's help, the same as `rb <command> --help`, for every command", async () => {
    for (const c of COMMANDS) {
      const viaHelp = await rb(["help", ...c.words]);
      const viaFlag = await rb([...c.words, "--help"]);
      expect(viaHelp).toEqual({ code: 0, stdout: commandHelp(c), stderr: "" });
      expect(viaFlag).toEqual(viaHelp);
      expect(viaHelp.stdout.startsWith(`Usage: ${usageOf(c)}\n`)).toBe(true);
    }
  });

  it("X-CLI-6 `rb help <group>` lists the group's commands; `rb help environment` gives the variables and their precedence", async () => {
    const agent = await rb(["help", "agent"]);
    expect(agent.code).toBe(0);
    for (const c of COMMANDS.filter((x) => x.words[0] === "agent")) expect(agent.stdout).toContain(usageOf(c));
    expect(agent.stdout).not.toContain("rb repo list");
    expect(await rb(["agent", "--help"])).toEqual(agent);

    const environment = await rb(["help", "environment"]);
    expect(environment.code).toBe(0);
    for (const name of ["RB_SERVER", "RB_TOKEN", "RB_AGENT_TOKEN", "RB_TIMEOUT_MS", "XDG_CONFIG_HOME"])
      expect(environment.stdout).toContain(name);
    expect(environment.stdout).toMatch(/a flag wins over the environment, which wins over the config file/);

    const global = await rb(["help"]);
    expect(global.code).toBe(0);
    expect(global.stdout).toMatch(/^rb: command-line client/);
    expect((await rb([])).code).toBe(2);
  });

  it("X-CLI-6 an unknown help topic exits 2 and lists the topics", async () => {
    const res = await rb(["help", "deploy"]);
    expect(res.code).toBe(2);
    expect(res.stderr).toMatch(/^No help topic "deploy"\. Topics: login, .*environment/);
  });

  it("X-CLI-6 `rb --version` and `rb version` print the version of rb's own package, with no server and no config file", async () => {
    const { version } = JSON.parse(readFileSync(new URL("../../cli/package.json", import.meta.url), "utf8"));
    for (const argv of [["--version"], ["version"], ["repo", "list", "--version"]])
      expect(await rb(argv)).toEqual({ code: 0, stdout: `rb ${version}`, stderr: "" });
    expect(JSON.parse((await rb(["version", "--json"])).stdout)).toEqual({ version });
    // A server that is not even a URL does not matter to a command about rb itself.
    const code = await main(["version"], { out: () => {}, err: () => {} }, { RB_SERVER: "not a url", XDG_CONFIG_HOME: "/nonexistent" });
    expect(code).toBe(0);
    expect(requests).toEqual([]);
  });
});
