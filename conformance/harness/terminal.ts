/**
 * Runs a command on a real pseudo-terminal, so a test can press keys as a user does (Ctrl-C and
 * Ctrl-D reach a prompt only through a TTY in raw mode; a pipe has neither). util-linux `script`
 * provides the terminal: it is part of every Debian system and needs no native add-on. What the
 * test writes goes to the terminal as typed keys; everything the command prints, stdout and stderr
 * alike, comes back as one stream, as on a screen.
 */
import { spawn } from "node:child_process";

export interface TerminalRun {
  /** Resolves once the screen shows `text`; rejects if the command ends first. */
  waitFor(text: string): Promise<void>;
  /** Types `keys` (control characters included) in one write, as a paste would arrive. */
  type(keys: string): void;
  /** The exit status and everything shown, carriage returns removed. */
  exited: Promise<{ code: number | null; screen: string }>;
}

const quote = (arg: string) => `'${arg.replaceAll("'", `'\\''`)}'`;

/**
 * `limitMs` only stops a command that hangs (say, a prompt that never returns), so the test fails
 * with what the screen showed instead of at vitest's timeout; no result depends on it.
 */
export function runInTerminal(argv: string[], options: { env: NodeJS.ProcessEnv; cwd: string; limitMs?: number }): TerminalRun {
  // -q: no banner; -e: script's own status is the command's; the session log goes nowhere.
  const child = spawn("script", ["-q", "-e", "-c", argv.map(quote).join(" "), "/dev/null"], {
    cwd: options.cwd,
    // A common terminal type: with TERM=dumb readline drops its line editing (no backspace).
    env: { ...options.env, TERM: "xterm" },
    stdio: ["pipe", "pipe", "pipe"],
  });
  child.stdin.on("error", () => undefined); // keys typed after the command ended go nowhere
  let screen = "";
  let ended = false;
  const waiters = new Set<() => void>();
  child.stdout.on("data", (d: Buffer) => {
    screen += d.toString("utf8").replaceAll("\r", "");
    for (const check of waiters) check();
  });
  child.stderr.on("data", (d: Buffer) => (screen += d.toString("utf8")));
  const limit = setTimeout(() => child.kill("SIGKILL"), options.limitMs ?? 15_000);
  const exited = new Promise<{ code: number | null; screen: string }>((resolve, reject) => {
    child.on("error", reject);
    child.on("close", (code) => {
      ended = true;
      clearTimeout(limit);
      for (const check of waiters) check();
      resolve({ code, screen });
    });
  });
  return {
    exited,
    type: (keys) => void child.stdin.write(keys),
    waitFor: (text) =>
      new Promise<void>((resolve, reject) => {
        const check = () => {
          if (screen.includes(text)) {
            waiters.delete(check);
            resolve();
          } else if (ended) {
            waiters.delete(check);
            reject(new Error(`The command ended before showing ${JSON.stringify(text)}. Screen:\n${screen}`));
          }
        };
        waiters.add(check);
        check();
      }),
  };
}
