/**
 * CPU time from Linux's /proc, for the benchmarks' figures that the machine's load moves less than
 * the rates. One place that reads a stat file: its fields come after the command name, which may
 * hold spaces and parentheses, so they are split after the last ")".
 */
import { readFileSync } from "node:fs";

/** USER_HZ: /proc's unit of CPU time on Linux. */
const CLOCK_TICKS = 100;

/**
 * A stat file's fields after the command name (`/proc/<pid>/stat`, or a thread's
 * `/proc/<pid>/task/<tid>/stat`): index 0 is the state, 1 the parent, 11 utime, 12 stime, 13 cutime,
 * 14 cstime. Throws where there is no such file (the process ended, or not Linux).
 */
export function statFields(path: string): string[] {
  const stat = readFileSync(path, "utf8");
  return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
}

/** A thread's or process's name as its stat file gives it. */
export function statName(path: string): string {
  const stat = readFileSync(path, "utf8");
  return stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
}

/** Clock ticks (stat fields) summed, in µs. */
export const ticksToMicros = (...ticks: Array<string | undefined>): number =>
  (ticks.reduce((sum, t) => sum + Number(t), 0) * 1e6) / CLOCK_TICKS;

/** User + system CPU time of every thread of `pid` so far, µs. Throws as statFields does. */
export function cpuMicrosOf(pid: number | string): number {
  const fields = statFields(`/proc/${pid}/stat`);
  return ticksToMicros(fields[11], fields[12]);
}
