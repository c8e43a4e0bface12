/**
 * `rb`: the command-line client of the repository-and-build service. This module only parses the
 * command line, finds the command and turns errors into messages and exit codes (0 ok, 1 failure,
 * 2 usage, 130 Ctrl-C at a prompt); the commands live in `commands/`.
 */
import { parseArgs, type ParseArgsConfig } from "node:util";
import { ConfigStore } from "./config-store.ts";
import { createContext, DEFAULT_SERVER, resolveServer, type Context, type Output } from "./context.ts";
import { CliError, EXIT_FAILURE, EXIT_OK, EXIT_USAGE, Interrupted, UsageError } from "./errors.ts";
import * as agent from "./commands/agent.ts";
import * as auth from "./commands/auth.ts";
import * as build from "./commands/build.ts";
import * as repo from "./commands/repo.ts";

interface Command {
  words: string[];
  usage: string;
  summary: string;
  /** Options besides the global ones; anything else is a usage error rather than silently ignored. */
  options?: string[];
  run(ctx: Context): Promise<void>;
}

const PAGING = ["page", "page-size"];

const COMMANDS: Command[] = [
  {
    words: ["login"],
    usage: "rb login [--email E]",
    summary: "Log in; the password is prompted for, or read from stdin when piped.",
    options: ["email"],
    run: auth.login,
  },
  { words: ["logout"], usage: "rb logout", summary: "Revoke the session on the server and delete the stored tokens.", run: auth.logout },
  { words: ["whoami"], usage: "rb whoami", summary: "Show the signed-in user.", run: auth.whoami },
  {
    words: ["repo", "list"],
    usage: "rb repo list [--page N] [--page-size N]",
    summary: "List your repositories.",
    options: PAGING,
    run: repo.list,
  },
  {
    words: ["repo", "create"],
    usage: "rb repo create <name> [--description D] [--default-branch B]",
    summary: "Create a repository.",
    options: ["description", "default-branch"],
    run: repo.create,
  },
  { words: ["repo", "show"], usage: "rb repo show <repo>", summary: "Show one repository.", run: repo.show },
  {
    words: ["build", "queue"],
    usage: "rb build queue <repo> [--ref R]",
    summary: "Queue a build (default ref: the repository's default branch).",
    options: ["ref"],
    run: build.queue,
  },
  {
    words: ["build", "list"],
    usage: "rb build list <repo> [--page N] [--page-size N]",
    summary: "List a repository's builds.",
    options: PAGING,
    run: build.list,
  },
  {
    words: ["agent", "register"],
    usage: "rb agent register <name>",
    summary: "Register a build agent and store its token on this machine.",
    run: agent.register,
  },
  {
    words: ["agent", "list"],
    usage: "rb agent list [--page N] [--page-size N]",
    summary: "List your build agents.",
    options: PAGING,
    run: agent.list,
  },
  {
    words: ["agent", "revoke"],
    usage: "rb agent revoke <id>",
    summary: "Delete an agent; its token stops working at once.",
    run: agent.revoke,
  },
  { words: ["agent", "poll"], usage: "rb agent poll", summary: "As the stored agent, claim the next queued build.", run: agent.poll },
  {
    words: ["agent", "report"],
    usage: "rb agent report <buildId> succeeded|failed",
    summary: "As the stored agent, report a build's result.",
    run: agent.report,
  },
];

const OPTIONS = {
  server: { type: "string" },
  json: { type: "boolean" },
  help: { type: "boolean", short: "h" },
  email: { type: "string" },
  description: { type: "string" },
  "default-branch": { type: "string" },
  ref: { type: "string" },
  page: { type: "string" },
  "page-size": { type: "string" },
} satisfies ParseArgsConfig["options"];
const GLOBAL_OPTIONS = ["server", "json", "help"];
const REPO_ARGUMENT = "<repo> is a repository's id (a UUID) or its name; a name is looked up among your repositories.";

export function helpText(): string {
  const width = Math.max(...COMMANDS.map((c) => c.usage.length));
  return [
    "rb: command-line client of the repository-and-build service",
    "",
    "Usage: rb <command> [options]",
    "",
    "Commands:",
    ...COMMANDS.map((c) => `  ${c.usage.padEnd(width)}  ${c.summary}`),
    `  ${"rb help".padEnd(width)}  Show this help.`,
    "",
    "Global options:",
    `  --server URL   The service (default: $RB_SERVER, else the server of the last login, else ${DEFAULT_SERVER})`,
    "  --json         Machine-readable output (tokens are never printed)",
    "  -h, --help     Show help",
    "",
    REPO_ARGUMENT,
    "Prompts: Ctrl-C exits (code 130) and changes nothing; Ctrl-D on an empty line cancels (code 1).",
    "",
    "State is kept in $XDG_CONFIG_HOME/rb/config.json (default ~/.config/rb/config.json), mode 0600.",
    "Exit codes: 0 success, 1 failure, 2 usage error, 130 interrupted (Ctrl-C at a prompt).",
  ].join("\n");
}

const stdio: Output = {
  out: (text) => void process.stdout.write(text + "\n"),
  err: (text) => void process.stderr.write(text + "\n"),
};

export async function main(argv: string[], io: Output = stdio, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  try {
    const { values, positionals } = parse(argv);
    if (positionals.length === 0 || positionals[0] === "help") {
      if (positionals.length === 0 && !values.help) {
        io.err(helpText());
        return EXIT_USAGE;
      }
      io.out(helpText());
      return EXIT_OK;
    }
    const command = findCommand(positionals);
    if (values.help) {
      io.out(`Usage: ${command.usage}\n\n${command.summary}${command.usage.includes("<repo>") ? `\n${REPO_ARGUMENT}` : ""}`);
      return EXIT_OK;
    }
    for (const name of Object.keys(values)) {
      if (!GLOBAL_OPTIONS.includes(name) && !command.options?.includes(name))
        throw new UsageError(`\`rb ${command.words.join(" ")}\` has no --${name} option. Usage: ${command.usage}`);
    }
    const store = new ConfigStore();
    const server = resolveServer(values.server, env, store);
    const ctx = createContext({ server, store, args: positionals.slice(command.words.length), options: values, io });
    await command.run(ctx);
    return EXIT_OK;
  } catch (err) {
    // Ctrl-C is the user's own doing: no message, like gh and npm (X-CLI-2).
    if (err instanceof Interrupted) return err.exitCode;
    if (err instanceof CliError) {
      io.err(err.message);
      return err.exitCode;
    }
    io.err(`Unexpected error: ${err instanceof Error ? err.message : String(err)}`);
    if (env.RB_DEBUG && err instanceof Error && err.stack) io.err(err.stack);
    return EXIT_FAILURE;
  }
}

function parse(argv: string[]) {
  try {
    return parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
  } catch (err) {
    // parseArgs' own wording names the offending option; add where to look.
    throw new UsageError(`${(err as Error).message}\nRun \`rb help\` for usage.`);
  }
}

function findCommand(positionals: string[]): Command {
  const [first, second] = positionals;
  const single = COMMANDS.find((c) => c.words.length === 1 && c.words[0] === first);
  if (single) return single;
  const group = COMMANDS.filter((c) => c.words[0] === first);
  if (group.length === 0) throw new UsageError(`Unknown command "${first}". Run \`rb help\` for usage.`);
  const sub = group.find((c) => c.words[1] === second);
  if (sub) return sub;
  const usages = group.map((c) => `  ${c.usage}`).join("\n");
  throw new UsageError(
    `${second === undefined ? `\`rb ${first}\` needs a subcommand` : `Unknown command "rb ${first} ${second}"`}. Usage:\n${usages}`,
  );
}
