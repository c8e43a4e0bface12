/**
 * Prompts: a visible answer or a secret, read with Node's readline in terminal mode, which does the
 * line editing (backspace, Ctrl-U, pasted text, arrow keys that must not land in the answer).
 * Neither `read` (npm's) nor Inquirer settles when readline closes on Ctrl-D, so the handling of
 * Ctrl-C and Ctrl-D (X-CLI-2) lives here:
 * - Ctrl-C on any line throws `Interrupted` (exit 130, nothing printed but the newline);
 * - Ctrl-D on an empty line throws `inputEnded` (exit 1, one line); on a non-empty line readline
 *   treats it as "delete the character under the cursor", so it never becomes part of the answer.
 */
import { createInterface } from "node:readline";
import { Writable } from "node:stream";
import { inputEnded, Interrupted } from "./errors.ts";

export interface PromptStreams {
  input: NodeJS.ReadStream;
  /** Where the prompt goes: stderr, so stdout stays clean for `--json` and pipes. */
  output: NodeJS.WriteStream;
}

const terminal: PromptStreams = { input: process.stdin, output: process.stderr };

/**
 * A secret, without echo. `what` names it in the Ctrl-D message. When stdin is not a terminal the
 * first line of stdin is the secret (for scripts: `echo "$PW" | rb login …`), "" if there is none.
 */
export async function readSecret(prompt: string, what: string, { input, output }: PromptStreams = terminal): Promise<string> {
  if (!input.isTTY) {
    const rl = createInterface({ input, terminal: false });
    for await (const line of rl) {
      rl.close();
      return line.replace(/\r$/, "");
    }
    return "";
  }
  return ask(prompt, what, input, output, false);
}

/** A visible answer (e.g. an email) from a terminal. */
export async function readLine(prompt: string, what: string, { input, output }: PromptStreams = terminal): Promise<string> {
  return ask(prompt, what, input, output, true);
}

/** Swallows readline's echo of a secret (its prompt redraws included); the prompt is written directly. */
const discard = () => new Writable({ write: (_chunk, _encoding, callback) => callback() });

function ask(prompt: string, what: string, input: NodeJS.ReadStream, output: NodeJS.WriteStream, echo: boolean): Promise<string> {
  return new Promise((resolve, reject) => {
    // Terminal mode puts the TTY in raw mode from here on, before the prompt shows, so a key typed
    // as soon as the prompt appears is read by readline, not by the kernel's line discipline.
    // historySize 0: a secret is never kept in readline's history.
    const rl = createInterface({ input, output: echo ? output : discard(), terminal: Boolean(input.isTTY), historySize: 0 });
    let settled = false;
    const settle = (finish: () => void, newline: boolean) => {
      if (settled) return;
      settled = true;
      rl.close(); // restores the terminal's mode and pauses stdin
      // Readline ends the line itself only after Enter with echo; otherwise end it here, so what
      // follows (an error, or the shell's prompt after Ctrl-C) starts on a line of its own.
      if (newline) output.write("\n");
      finish();
    };
    rl.on("line", (line) => settle(() => resolve(line), !echo));
    rl.on("SIGINT", () => settle(() => reject(new Interrupted()), true));
    // Ctrl-D on an empty line, or the terminal went away: the prompt will never be answered.
    rl.on("close", () => settle(() => reject(inputEnded(what)), true));
    if (echo) {
      rl.setPrompt(prompt);
      rl.prompt();
    } else {
      output.write(prompt);
    }
  });
}
