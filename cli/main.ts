/**
 * `rb`: the command-line client of the repository-and-build service. This module reads the command
 * line, finds the command in the table (`command-table.ts`), checks its arguments and options, and
 * turns errors into messages and exit codes (0 ok, 1 failure, 2 usage, 130 Ctrl-C at a prompt). Every
 * check of the command line happens here, before the command runs: a usage error never follows a
 * request (X-CLI-1). The commands live in `commands/`.
 */
import { type Command, commandNamed, groupCommands, optionsOf, usageOf } from "./command.ts";
import { COMMANDS } from "./command-table.ts";
import { type CommandLine, readCommandLine, unknownOptionMessage } from "./command-line.ts";
import { ConfigStore, defaultConfigPath } from "./config-store.ts";
import { createContext, type LocalContext, type Output, resolveServer, type Runtime } from "./context.ts";
import { sleep } from "./device-flow.ts";
import { CliError, EXIT_FAILURE, EXIT_OK, EXIT_USAGE, Interrupted, UsageError } from "./errors.ts";
import { commandHelp, globalHelp, groupHelp } from "./help.ts";
import type { OptionValue } from "./options.ts";
import { VERSION } from "./version.ts";

const stdio: Output = {
  out: (text) => void process.stdout.write(text + "\n"),
  err: (text) => void process.stderr.write(text + "\n"),
};

const realRuntime: Runtime = { now: () => Date.now(), sleep };

export async function main(
  argv: string[],
  io: Output = stdio,
  env: NodeJS.ProcessEnv = process.env,
  runtime: Runtime = realRuntime,
): Promise<number> {
  try {
    return await run(argv, io, env, runtime);
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

async function run(argv: string[], io: Output, env: NodeJS.ProcessEnv, runtime: Runtime): Promise<number> {
  const line = readCommandLine(argv);
  const command = commandNamed(line.words, COMMANDS);
  if (line.unknown.length) {
    const hint = command ? `Usage: ${usageOf(command)}` : "Run `rb help` for usage.";
    throw new UsageError(`${unknownOptionMessage(line.unknown[0]!)} ${hint}`);
  }
  if (line.given.has("version")) {
    io.out(line.given.has("json") ? JSON.stringify({ version: VERSION }, null, 2) : `rb ${VERSION}`);
    return EXIT_OK;
  }
  if (line.words.length === 0) {
    if (!line.given.has("help")) {
      io.err(globalHelp(COMMANDS));
      return EXIT_USAGE;
    }
    io.out(globalHelp(COMMANDS));
    return EXIT_OK;
  }
  if (!command) {
    const [first, second] = line.words;
    const group = groupCommands(first!, COMMANDS);
    if (group.length === 0) throw new UsageError(`Unknown command "${first}". Run \`rb help\` for usage.`);
    if (second === undefined && line.given.has("help")) {
      io.out(groupHelp(first!, COMMANDS));
      return EXIT_OK;
    }
    const usages = group.map((c) => `  ${usageOf(c)}`).join("\n");
    throw new UsageError(
      `${second === undefined ? `\`rb ${first}\` needs a subcommand` : `Unknown command "rb ${first} ${second}"`}. Usage:\n${usages}`,
    );
  }
  if (line.given.has("help")) {
    io.out(commandHelp(command));
    return EXIT_OK;
  }
  const options = checkedOptions(command, line);
  const args = checkedArguments(command, line.words.slice(command.words.length));
  const local: LocalContext = { args, options, json: options.json === true, io, env, runtime };
  if (command.local) await command.run(local, COMMANDS);
  else {
    const store = new ConfigStore(defaultConfigPath(env));
    const server = resolveServer(typeof options.server === "string" ? options.server : undefined, env, store);
    await command.run(createContext({ ...local, server, store }));
  }
  return EXIT_OK;
}

/** The options given, each one the command takes, with its value checked (`options.ts`). */
function checkedOptions(command: Command, line: CommandLine): Record<string, OptionValue> {
  const allowed = optionsOf(command);
  const options: Record<string, OptionValue> = {};
  for (const [name, { spec, raw, as }] of line.given) {
    if (!allowed.includes(name)) throw new UsageError(`\`rb ${command.words.join(" ")}\` has no ${as} option. Usage: ${usageOf(command)}`);
    options[name] = raw === true ? true : spec.parse ? spec.parse(raw) : raw;
  }
  return options;
}

/** The arguments after the command words: as many as the command takes, each listed word one of its list. */
function checkedArguments(command: Command, args: string[]): string[] {
  const required = command.args.filter((a) => !a.optionalWords);
  const usage = `Usage: ${usageOf(command)}`;
  if (args.length < required.length) throw new UsageError(`Missing argument. ${usage}`);
  if (args.length > required.length && !command.args.some((a) => a.optionalWords))
    throw new UsageError(`Unexpected argument "${args[required.length]}". ${usage}`);
  command.args.forEach((a, i) => {
    const given = args[i];
    if (a.choices && given !== undefined && !a.choices.includes(given))
      throw new UsageError(`The ${a.name} must be ${a.choices.map((c) => `"${c}"`).join(" or ")}, not "${given}". ${usage}`);
  });
  return args;
}
