/**
 * X-CLI-6 `rb completion bash|zsh|fish`: each script is valid for its shell (`bash -n`, `zsh -n`,
 * `fish --no-execute`) and, run in that shell, offers exactly what the command table says: the
 * commands, each group's subcommands, each command's options, the listed words of an argument, the
 * help topics. The expectations are read from the table, not from the scripts, so a script that drifts
 * from the table fails here. bash is always there; the project's setup installs no zsh or fish, so
 * their checks run where those shells are installed (`apt-get install zsh fish`) and are skipped,
 * saying so, elsewhere.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { groupCommands, optionsOf } from "../../cli/command.ts";
import { COMMANDS } from "../../cli/command-table.ts";
import { completionScript, SHELLS, type Shell } from "../../cli/completion.ts";
import { topics } from "../../cli/help.ts";
import { main } from "../../cli/main.ts";

const has = (shell: string) => spawnSync(shell, ["-c", "exit 0"]).status === 0;

/** A command line being completed: the words before the cursor, and the word under it. */
interface Case {
  typed: string[];
  current: string;
  expected: string[];
}

/** What the table says each kind of position offers. */
function cases(): Case[] {
  const first = [...new Set(COMMANDS.map((c) => c.words[0]!))];
  const list: Case[] = [{ typed: [], current: "", expected: first }];
  for (const word of first) {
    const group = groupCommands(word, COMMANDS);
    if (group.length) {
      list.push({ typed: [word], current: "", expected: group.map((c) => c.words[1]!) });
      list.push({ typed: ["help", word], current: "", expected: group.map((c) => c.words[1]!) });
    }
  }
  list.push({ typed: ["help"], current: "", expected: topics(COMMANDS) });
  for (const c of COMMANDS) {
    const options = optionsOf(c).map((o) => `--${o}`);
    list.push({ typed: [...c.words], current: "--", expected: options });
    // Options and their values before the command do not count as command words.
    list.push({ typed: ["--server", "http://127.0.0.1:1", "--json", ...c.words], current: "--", expected: options });
    c.args.forEach((a, i) => {
      if (a.choices) list.push({ typed: [...c.words, ...Array.from({ length: i }, () => "x")], current: "", expected: [...a.choices] });
    });
  }
  return list;
}

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "rb-completion-"));
  for (const shell of SHELLS) writeFileSync(join(dir, `rb.${shell}`), completionScript(shell, COMMANDS));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const quote = (word: string) => `'${word.replaceAll("'", `'\\''`)}'`;

/** One shell run for all cases; each case's offers come back as one line, space-separated. */
function offers(shell: Shell, all: Case[]): string[][] {
  const script = join(dir, `rb.${shell}`);
  let program: string;
  if (shell === "bash") {
    program = [
      `source ${quote(script)}`,
      ...all.map((c) => {
        const words = ["rb", ...c.typed, c.current].map(quote).join(" ");
        return `COMP_WORDS=(${words}); COMP_CWORD=${c.typed.length + 1}; COMPREPLY=(); _rb_completion; echo "\${COMPREPLY[*]}"`;
      }),
    ].join("\n");
    return run("bash", ["--norc", "-c", program]);
  }
  if (shell === "zsh") {
    // Outside a completion widget: _describe and compdef stand in, _describe printing each offer's word.
    program = [
      "compdef() { :; }",
      // biome-ignore lint/suspicious/noTemplateCurlyInString: zsh's own ${…} expansions, not a template
      '_describe() { local name=${@[-1]}; local -a items=("${(@P)name}"); print -r -- "${(j: :)${items[@]%%:*}}" }',
      `source ${quote(script)}`,
      ...all.map((c) => {
        const words = ["rb", ...c.typed, c.current].map(quote).join(" ");
        return `words=(${words}); CURRENT=${c.typed.length + 2}; _rb || print`;
      }),
    ].join("\n");
    return run("zsh", ["-f", "-c", program]);
  }
  program = [
    `source ${quote(script)}`,
    ...all.map((c) => `echo (complete -C${quote(["rb", ...c.typed, c.current].join(" "))} | string replace -r '\\t.*' '')`),
  ].join("\n");
  return run("fish", ["--no-config", "-c", program]);
}

function run(shell: string, args: string[]): string[][] {
  return execFileSync(shell, args, { encoding: "utf8" })
    .split("\n")
    .slice(0, -1)
    .map((line) => line.split(" ").filter(Boolean));
}

describe("X-CLI-6 shell completion made from the command table", () => {
  it("X-CLI-6 `rb completion <shell>` prints the script of each shell; another shell is a usage error", async () => {
    for (const shell of SHELLS) {
      const out: string[] = [];
      expect(await main(["completion", shell], { out: (t) => out.push(t), err: () => {} }, {})).toBe(0);
      expect(`${out.join("\n")}\n`).toBe(completionScript(shell, COMMANDS));
    }
    const err: string[] = [];
    expect(await main(["completion", "powershell"], { out: () => {}, err: (t) => err.push(t) }, {})).toBe(2);
    expect(err.join("\n")).toMatch(/^The shell must be "bash" or "zsh" or "fish", not "powershell"/);
  });

  for (const shell of SHELLS) {
    it(`X-CLI-6 the ${shell} script is valid ${shell} and offers what the table says at every position`, (ctx) => {
      if (!has(shell)) return ctx.skip(`${shell} is not installed here (the project's setup installs no shells; apt-get install ${shell})`);
      const check = shell === "fish" ? ["--no-execute", join(dir, "rb.fish")] : ["-n", join(dir, `rb.${shell}`)];
      expect(spawnSync(shell, check, { encoding: "utf8" })).toMatchObject({ status: 0, stderr: "" });

      const all = cases();
      const got = offers(shell, all);
      expect(got).toHaveLength(all.length);
      all.forEach((c, i) => {
        expect({ line: `rb ${[...c.typed, c.current].join(" ")}`, offers: [...got[i]!].sort() }).toEqual({
          line: `rb ${[...c.typed, c.current].join(" ")}`,
          offers: [...c.expected].sort(),
        });
      });
    });
  }

  it("X-CLI-6 bash offers nothing where a value is expected, and nothing after words that are no command", () => {
    const got = offers("bash", [
      { typed: ["repo", "list", "--server"], current: "", expected: [] },
      { typed: ["repository"], current: "", expected: [] },
      { typed: ["login", "--email"], current: "a", expected: [] },
    ]);
    expect(got).toEqual([[], [], []]);
  });
});
