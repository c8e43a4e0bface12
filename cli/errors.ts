/**
 * Errors the client turns into one clear line on stderr and an exit code. Commands throw them;
 * only `main.ts` prints them, so every failure is reported the same way.
 */
import type { Problem } from "./api-client.ts";

export {
  CliError,
  EXIT_FAILURE,
  EXIT_INTERRUPTED,
  EXIT_OK,
  EXIT_USAGE,
  inputEnded,
  Interrupted,
  UsageError,
} from "../server/terminal/errors.ts";
import { CliError } from "../server/terminal/errors.ts";

export const notLoggedIn = () => new CliError("Not logged in. Run `rb login` first.");
export const sessionExpired = () => new CliError("Your session has expired or was revoked. Run `rb login` again.");
export const agentTokenRefused = () => new CliError("This agent's token was revoked or expired. Register the agent again.");

/** A problem+json answer the command has no special wording for: its detail and field errors. */
export function problemError(status: number, problem: Problem | undefined): CliError {
  const lines = [problem?.detail ?? problem?.title ?? `The server answered ${status}.`];
  for (const e of problem?.errors ?? []) lines.push(`  - ${e.field.replace(/^body\./, "")}: ${e.message}`);
  return new CliError(lines.join("\n"));
}
