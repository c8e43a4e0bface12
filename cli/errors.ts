/**
 * Errors the client turns into one clear line on stderr and an exit code. Commands throw them;
 * only `main.ts` prints them, so every failure is reported the same way.
 */
import type { Problem } from "./api-client.ts";

export const EXIT_OK = 0;
export const EXIT_FAILURE = 1;
export const EXIT_USAGE = 2;
/** 128 + SIGINT, what a shell reports for a command stopped with Ctrl-C (X-CLI-2). */
export const EXIT_INTERRUPTED = 130;

export class CliError extends Error {
  readonly exitCode: number;
  constructor(message: string, exitCode = EXIT_FAILURE) {
    super(message);
    this.name = "CliError";
    this.exitCode = exitCode;
  }
}

/** The command line itself is wrong: exit 2, like most Unix tools. */
export class UsageError extends CliError {
  constructor(message: string) {
    super(message, EXIT_USAGE);
    this.name = "UsageError";
  }
}

/**
 * Ctrl-C at a prompt (X-CLI-2). The terminal is in raw mode there, so no SIGINT arrives: the prompt
 * sees the keystroke and throws this. `main.ts` prints nothing for it (the prompt already ended the
 * line) and exits 130, as a shell reports a command stopped by SIGINT.
 */
export class Interrupted extends CliError {
  constructor() {
    super("Interrupted.", EXIT_INTERRUPTED);
    this.name = "Interrupted";
  }
}

/** Ctrl-D (end of input) on an empty line at a prompt: the user gave up answering (X-CLI-2). */
export const inputEnded = (what: string) => new CliError(`Cancelled: input ended (Ctrl-D) at the ${what} prompt.`);

export const notLoggedIn = () => new CliError("Not logged in. Run `rb login` first.");
export const sessionExpired = () => new CliError("Your session has expired or was revoked. Run `rb login` again.");
export const agentTokenRefused = () => new CliError("This agent's token was revoked or expired. Register the agent again.");

/** A problem+json answer the command has no special wording for: its detail and field errors. */
export function problemError(status: number, problem: Problem | undefined): CliError {
  const lines = [problem?.detail ?? problem?.title ?? `The server answered ${status}.`];
  for (const e of problem?.errors ?? []) lines.push(`  - ${e.field.replace(/^body\./, "")}: ${e.message}`);
  return new CliError(lines.join("\n"));
}
