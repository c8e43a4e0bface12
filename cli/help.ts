/**
 * The help texts, made from the command table: `rb help` (all commands), `rb help <group>`,
 * `rb help <command>` (same as `rb <command> --help`) and `rb help environment`.
 */
import { type Command, groupCommands, optionsOf, usageOf } from "./command.ts";
import { DEFAULT_SERVER } from "./context.ts";
import { AGENT_TOKEN_VARIABLE, USER_TOKEN_VARIABLE } from "./credentials.ts";
import { GLOBAL_OPTIONS, optionSpec, optionUsage } from "./options.ts";

const REPO_ARGUMENT = "<repo> is a repository's id (a UUID) or its name; a name is looked up among your repositories.";
const EXIT_CODES = "Exit codes: 0 success, 1 failure, 2 usage error, 130 interrupted (Ctrl-C at a prompt).";
const CONFIG_FILE = "State is kept in $XDG_CONFIG_HOME/rb/config.json (default ~/.config/rb/config.json), mode 0600.";

/** Topics besides the commands and their groups. */
export const EXTRA_TOPICS = ["environment"] as const;

export function globalHelp(commands: readonly Command[]): string {
  const usages = commands.map(usageOf);
  const width = Math.max(...usages.map((u) => u.length));
  return [
    "rb: command-line client of the repository-and-build service",
    "",
    "Usage: rb <command> [options]",
    "",
    "Commands:",
    ...commands.map((c, i) => `  ${usages[i]!.padEnd(width)}  ${c.summary}`),
    "",
    "Global options:",
    ...optionLines(GLOBAL_OPTIONS),
    "",
    REPO_ARGUMENT,
    `Tokens: ${USER_TOKEN_VARIABLE} (a user's) and ${AGENT_TOKEN_VARIABLE} (an agent's) are used before the config file; \`rb help environment\` says more.`,
    "Prompts: Ctrl-C exits (code 130) and changes nothing; Ctrl-D on an empty line cancels (code 1).",
    "",
    CONFIG_FILE,
    EXIT_CODES,
  ].join("\n");
}

export function commandHelp(command: Command): string {
  const lines = [`Usage: ${usageOf(command)}`, "", command.summary, ...(command.details ?? [])];
  if (command.args.some((a) => a.name === "repo")) lines.push(REPO_ARGUMENT);
  if (command.credential === "user")
    lines.push(`Sends the user's token: ${USER_TOKEN_VARIABLE} if set, else the login \`rb login\` stored for the server.`);
  if (command.credential === "agent")
    lines.push(`Sends the agent's token: ${AGENT_TOKEN_VARIABLE} if set, else the agent \`rb agent register\` stored for the server.`);
  lines.push("", "Options:", ...optionLines(optionsOf(command)));
  return lines.join("\n");
}

export function groupHelp(word: string, commands: readonly Command[]): string {
  const group = groupCommands(word, commands);
  const usages = group.map(usageOf);
  const width = Math.max(...usages.map((u) => u.length));
  return [
    `Usage: rb ${word} <command> [options]`,
    "",
    "Commands:",
    ...group.map((c, i) => `  ${usages[i]!.padEnd(width)}  ${c.summary}`),
    "",
    `\`rb help ${word} <command>\` shows a command's options.`,
  ].join("\n");
}

export function environmentHelp(): string {
  return [
    "Environment variables:",
    "  RB_SERVER        The service, when --server is not given.",
    `  ${USER_TOKEN_VARIABLE.padEnd(15)}  A user's access token (the accessToken of POST /auth/login), sent instead of the`,
    "                   login `rb login` stored. It is sent as it is: never refreshed, never stored.",
    `  ${AGENT_TOKEN_VARIABLE.padEnd(15)}  A build agent's token (the agentToken of POST /buildagent/register), sent by`,
    "                   `rb agent poll` and `rb agent report` instead of the agent `rb agent register` stored.",
    "  RB_ISSUER        The identity service of `rb login --device`, when --issuer is not given.",
    "  RB_CLIENT_ID     Its application's client id, when --client-id is not given.",
    "  RB_RESOURCE      The API its tokens are for (RFC 8707), when --resource is not given.",
    "  RB_TIMEOUT_MS    How long to wait for an answer, in milliseconds (default 15000).",
    "  XDG_CONFIG_HOME  Where the config file is: $XDG_CONFIG_HOME/rb/config.json (default ~/.config/rb/config.json).",
    "  RB_DEBUG         Set to print the stack trace of an unexpected error.",
    "An empty variable counts as unset.",
    "",
    "Precedence: a flag wins over the environment, which wins over the config file.",
    `  server:       --server, then RB_SERVER, then the server of the last \`rb login\`, then ${DEFAULT_SERVER}`,
    `  user token:   ${USER_TOKEN_VARIABLE}, then the tokens \`rb login\` stored (sent only to the server that issued them)`,
    `  agent token:  ${AGENT_TOKEN_VARIABLE}, then the agent \`rb agent register\` stored (sent only to its server)`,
    "Tokens have no flag: a command line can be read by other users of the machine.",
    "`rb auth status` shows the server and where each token comes from; it never prints a token.",
    "",
    "On CI: set RB_SERVER and RB_AGENT_TOKEN (an agent) or RB_TOKEN (a user) as secrets; no `rb login`,",
    "`rb agent register` or config file is needed.",
  ].join("\n");
}

/** The help of `rb help <words…>`, or undefined when the words name no topic. */
export function topicHelp(words: readonly string[], commands: readonly Command[]): string | undefined {
  const topic = words.join(" ");
  if (topic === "environment") return environmentHelp();
  const command = commands.find((c) => c.words.join(" ") === topic);
  if (command) return commandHelp(command);
  if (words.length === 1 && groupCommands(topic, commands).length) return groupHelp(topic, commands);
  return undefined;
}

/** Every topic `rb help` takes, for its error message and the completion scripts. */
export function topics(commands: readonly Command[]): string[] {
  return [...new Set(commands.map((c) => c.words[0]!)), ...EXTRA_TOPICS];
}

function optionLines(names: readonly string[]): string[] {
  const specs = names.map(optionSpec);
  const shown = specs.map((s) => (s.short ? `-${s.short}, ${optionUsage(s)}` : `    ${optionUsage(s)}`));
  const width = Math.max(...shown.map((s) => s.length));
  return specs.map((s, i) => `  ${shown[i]!.padEnd(width)}  ${s.description}`);
}
