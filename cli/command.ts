/**
 * What a command of `rb` is: its words, arguments and options, and how usage shows them. The commands
 * themselves are listed once, in `command-table.ts`; the parser (`main.ts`), the help (`help.ts`) and
 * the shell completion scripts (`completion.ts`) all read that table.
 */
import type { Context, LocalContext } from "./context.ts";
import { GLOBAL_OPTIONS, optionSpec, optionUsage } from "./options.ts";

/** A positional argument: `<repo>`, one of some words (`succeeded|failed`), or any number of words (`[topic...]`). */
export interface Argument {
  name: string;
  choices?: readonly string[];
  optionalWords?: boolean;
}

interface CommandBase {
  words: readonly string[];
  args: readonly Argument[];
  /** Options besides the global ones; any other is a usage error rather than silently ignored. */
  options: readonly string[];
  summary: string;
  /** More lines for `rb help <command>`. */
  details?: readonly string[];
  /** The token the command sends, so its help can say where that comes from. */
  credential?: "user" | "agent";
}

/** A command that talks to the server. */
export interface ServerCommand extends CommandBase {
  local?: false;
  run(ctx: Context): Promise<void>;
}

/** A command about rb itself, which needs no server and no config file (help, version, completion). */
export interface LocalCommand extends CommandBase {
  local: true;
  run(ctx: LocalContext, commands: readonly Command[]): Promise<void>;
}

export type Command = ServerCommand | LocalCommand;

/** `<repo>`, `succeeded|failed` or `[topic...]`, as usage shows an argument. */
export const argumentUsage = (a: Argument) => (a.choices ? a.choices.join("|") : a.optionalWords ? `[${a.name}...]` : `<${a.name}>`);

/** `rb repo create <name> [--description D] [--default-branch B]`. */
export function usageOf(command: Command): string {
  return [
    "rb",
    ...command.words,
    ...command.args.map(argumentUsage),
    ...command.options.map((o) => `[${optionUsage(optionSpec(o))}]`),
  ].join(" ");
}

/** The options a command takes: its own, then the global ones. */
export const optionsOf = (command: Command): string[] => [...command.options, ...GLOBAL_OPTIONS];

/** The command named by the first words of `words`, if any; a group word alone (`repo`) names none. */
export function commandNamed(words: readonly string[], commands: readonly Command[]): Command | undefined {
  return commands.find((c) => c.words.every((w, i) => words[i] === w));
}

/** The first words that name groups of commands (`repo`, `build`, `agent`, `auth`). */
export function groupCommands(word: string, commands: readonly Command[]): Command[] {
  return commands.filter((c) => c.words.length > 1 && c.words[0] === word);
}
