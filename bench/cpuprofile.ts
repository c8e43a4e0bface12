/**
 * V8 CPU profiles for the benchmarks: recording one per timed run (through the inspector, so
 * start-up and untimed set-up stay out of it) and reading them back. The readers that turn them into
 * tables are `bench/profile-summary.ts` (self time by part, file and function, any benchmark) and
 * `bench/token/profile-shares.ts` (the token endpoint's parts, by stack).
 */
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { Session } from "node:inspector/promises";
import { join } from "node:path";

export interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber: number;
}
export interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
export interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/**
 * Profiles this process between `start()` and `stop()`, writing `<dir>/<prefix>-runNN.cpuprofile`
 * for each run; without a `dir`, both do nothing.
 */
export function runProfiler(dir: string | undefined, prefix: string) {
  if (!dir) return { start: async () => {}, stop: async () => {} };
  const session = new Session();
  session.connect();
  let run = 0;
  return {
    async start() {
      await session.post("Profiler.enable");
      await session.post("Profiler.start");
    },
    async stop() {
      const { profile } = await session.post("Profiler.stop");
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, `${prefix}-run${String(++run).padStart(2, "0")}.cpuprofile`), JSON.stringify(profile));
    },
  };
}

/** The `.cpuprofile` files named by the arguments: files as given, directories by their contents. */
export function profileFiles(args: string[]): string[] {
  return args.flatMap((a) =>
    statSync(a).isDirectory()
      ? readdirSync(a)
          .filter((f) => f.endsWith(".cpuprofile"))
          .map((f) => join(a, f))
      : [a],
  );
}

export const readProfile = (path: string) => JSON.parse(readFileSync(path, "utf8")) as Profile;
