/**
 * The processes a crash test starts and kills, and what it sets up around them. After the file's
 * tests every child still running is killed (SIGKILL) and the clean-ups run, last first (a
 * database is dropped before its server stops).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { afterAll } from "vitest";

export function crashChildren(script: string) {
  const children = new Set<ChildProcess>();
  const cleanups: Array<() => Promise<void> | void> = [];
  afterAll(async () => {
    for (const c of children) c.kill("SIGKILL");
    for (const f of cleanups.reverse()) await f();
  });
  return {
    cleanups,
    /** `script` under tsx with `args`, our environment plus `env`; its stdout piped, its stderr ours. */
    start(args: string[], env: Record<string, string>): ChildProcess {
      const child = spawn(process.execPath, ["--import", "tsx", script, ...args], {
        env: { ...process.env, ...env },
        stdio: ["ignore", "pipe", "inherit"],
      });
      children.add(child);
      child.on("exit", () => children.delete(child));
      return child;
    },
  };
}
