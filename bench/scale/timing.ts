/**
 * How bench:scale times: each operation run many times on both scales, the small and the large one
 * taking turns run by run (so both see the same load on a shared machine, whose fsync latency
 * swings widely), and the median kept; and the spread of a series of samples.
 */
import { performance } from "node:perf_hooks";
import type { Scale } from "./databases.ts";

export const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
export const quantile = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))]!;

/** Figures by name, ms. */
export type Figures = Record<string, number>;
/** One measured operation on a scale: its run `i` resolves to extra named figures (ms) or nothing. */
// biome-ignore lint/suspicious/noConfusingVoidType: most operations return nothing; a few return extra figures
export type Op = (s: Scale, i: number) => Promise<Figures | void>;

/** Runs `op` `runs` times on each scale, small and large taking turns; the median per figure and scale. */
export async function timePaired(
  name: string,
  runs: number,
  small: Scale,
  large: Scale,
  op: Op,
): Promise<{ small: Figures; large: Figures }> {
  const samples = { small: {} as Record<string, number[]>, large: {} as Record<string, number[]> };
  for (let i = 0; i < runs; i++) {
    for (const [key, s] of [
      ["small", small],
      ["large", large],
    ] as const) {
      const t = performance.now();
      const extra = await op(s, i);
      const ms = performance.now() - t;
      for (const [k, v] of Object.entries({ [name]: ms, ...(extra ?? {}) })) (samples[key][k] ??= []).push(v);
    }
  }
  const medians = (x: Record<string, number[]>) => Object.fromEntries(Object.entries(x).map(([k, v]) => [k, median(v)]));
  return { small: medians(samples.small), large: medians(samples.large) };
}

/** A series of samples, ms: its median, p99, maximum and count. */
export interface Spread {
  median: number;
  p99: number;
  max: number;
  n: number;
}
export const spread = (xs: number[]): Spread => ({ median: median(xs), p99: quantile(xs, 0.99), max: Math.max(...xs), n: xs.length });
