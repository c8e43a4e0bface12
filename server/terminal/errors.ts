/**
 * Errors a command-line program turns into one clear line on stderr and an exit code: shared by the
 * `rb` client (cli/) and the admin command (app/admin.ts), so both report failures, Ctrl-C and
 * Ctrl-D the same way.
 */
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
