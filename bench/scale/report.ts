/**
 * bench:scale's output: each round's figures as they come, then the table of the rounds (the
 * median of each figure and of its large/small ratio), a PASS / NOT MET line per figure against
 * the target, and each purge against its control.
 */
import type { PurgeFigures } from "./purges.ts";
import { LARGE, SMALL, TARGET } from "./settings.ts";
import { type Figures, median, type Spread } from "./timing.ts";

export interface Round {
  small: Figures;
  large: Figures;
}

const fmt = (x: Spread) => `median ${x.median.toFixed(2)}, p99 ${x.p99.toFixed(2)}, max ${x.max.toFixed(2)} ms (${x.n})`;

/** One line: the round's figure pairs, small / large. */
export function printRound(r: number, { small: a, large: b }: Round): void {
  console.log(
    `round ${r + 1}: ` +
      Object.keys(a)
        .map((k) => `${k.trim()} ${a[k]!.toFixed(3)} / ${b[k]!.toFixed(3)} ms`)
        .join("; "),
  );
}

/** The table of the rounds and the target's verdict per figure. */
export function printRounds(rounds: Round[]): void {
  console.log(
    `\n| query | ${SMALL.toLocaleString("en")} rows, ms | ${LARGE.toLocaleString("en")} rows, ms | ratio (median of rounds) | ratios per round |`,
  );
  console.log("|---|---:|---:|---:|---|");
  for (const k of Object.keys(rounds[0]!.small)) {
    const ratios = rounds.map((x) => x.large[k]! / x.small[k]!);
    console.log(
      `| ${k} | ${median(rounds.map((x) => x.small[k]!)).toFixed(3)} | ${median(rounds.map((x) => x.large[k]!)).toFixed(3)} | ${median(ratios).toFixed(2)} | ${ratios.map((x) => x.toFixed(2)).join(", ")} |`,
    );
  }
  console.log(`\ntarget: each figure within ${TARGET}x of its ${SMALL.toLocaleString("en")}-row figure (median of the rounds' ratios)`);
  for (const k of Object.keys(rounds[0]!.small)) {
    const ratio = median(rounds.map((x) => x.large[k]! / x.small[k]!));
    const note = k.startsWith("history: `page`") ? " (bounded on purpose: clients page by cursor)" : "";
    console.log(`  ${ratio <= TARGET ? "PASS   " : "NOT MET"} ${ratio.toFixed(2)}x  ${k.trim()}${note}`);
  }
}

/** The query plans at the large scale. */
export function printPlans(plans: string[]): void {
  console.log(`\nquery plans at ${LARGE.toLocaleString("en")} rows:\n  ${plans.join("\n  ")}`);
}

/** Each purge: what it deleted, its batches, its controls, and the verdict (against the control taking turns with it). */
export function printPurges(runs: Array<[string, PurgeFigures]>): void {
  for (const [what, p] of runs) {
    console.log(
      `\nretention at ${LARGE.toLocaleString("en")} rows, ${what}: ${p.rows.toLocaleString("en")} deleted in ${p.batches.n} batches of ${p.batchRows} in ${p.seconds.toFixed(1)} s`,
    );
    console.log(`  a batch (DELETE + COMMIT): ${fmt(p.batches)}; event loop's longest delay meanwhile ${p.loopMaxMs.toFixed(1)} ms`);
    console.log(`  control, a one-row write on the same database between each two batches: ${fmt(p.interleaved)}`);
    console.log(
      `  a one-row write before and after the purge: ${fmt(p.control)}; event loop's longest delay ${p.controlLoopMaxMs.toFixed(1)} ms (ratio ${(p.batches.p99 / p.control.p99).toFixed(2)}x)`,
    );
    // The purge must not stall a request's write more than a request's own write does.
    const stall = p.batches.p99 / p.interleaved.p99;
    console.log(
      `  ${stall <= TARGET ? "PASS   " : "NOT MET"} ${stall.toFixed(2)}x  the purge of ${what}: a batch's p99 against a one-row write's p99 taking turns with it (target within ${TARGET}x)`,
    );
  }
}
