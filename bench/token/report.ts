/**
 * What bench/token.ts prints at the end: one row per grant and peer (the rates, their ratio round by
 * round, the target and its verdict, latencies and CPU as figures), then one verdict line per target.
 * A verdict is met only when every round's ratio reaches the target: a mean could hide a round the
 * peer won. The closed-loop p50/p99 are shown without a verdict: at a fixed number of connections
 * they follow from the rate (Little's law); latency's target is measured at a fixed offered rate.
 */
import type { RunResult } from "./load.ts";
import type { Grant, Peer, RunSetting, Target } from "./peers.ts";

/** One grant against one peer: ours' and the peer's run of each round, side by side. */
export interface Pairing {
  grant: Grant;
  peer: Peer;
  target: Target;
  ours: RunResult[];
  theirs: RunResult[];
}

export const GRANT_NAMES: Record<Grant, string> = {
  code: "authorization_code + PKCE (offline_access)",
  refresh: "refresh_token (rotation)",
  cc: "client_credentials (JWT for one API)",
};

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const sd = (xs: number[]) => (xs.length < 2 ? 0 : Math.sqrt(xs.reduce((a, x) => a + (x - mean(xs)) ** 2, 0) / (xs.length - 1)));
export const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
/** A figure a server has no value for (NaN: Keycloak's event loop) prints as n/a. */
export const f0 = (n: number) => (Number.isNaN(n) ? "n/a" : n.toFixed(0));
const f1 = (n: number) => n.toFixed(1);
const f2 = (n: number) => n.toFixed(2);
export const cpu = (r: RunResult) => r.cpuMicrosPerRequest ?? NaN;
export const loop = (r: RunResult) => r.loopMicrosPerRequest ?? NaN;

/** Each round's ratio of ours' rate to the peer's. */
export const ratios = (p: Pairing) => p.ours.map((r, i) => r.rps / p.theirs[i]!.rps);

/** MET, NOT MET, or "context" for a target shown without a verdict. */
export function verdictOf(p: Pairing): "MET" | "NOT MET" | "context" {
  if (p.target.kind === "context") return "context";
  return Math.min(...ratios(p)) >= p.target.ratio ? "MET" : "NOT MET";
}

const targetText = (t: Target) => (t.ratio === undefined ? "none" : `≥ ${f2(t.ratio)}×${t.kind === "context" ? " (context)" : ""}`);

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  const line = (r: string[]) => `| ${r.map((c, i) => (i <= 1 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join(" | ")} |`;
  return [
    line(rows[0]!),
    `|${widths.map((w, i) => (i <= 1 ? "-".repeat(w + 2) : "-".repeat(w + 1) + ":")).join("|")}|`,
    ...rows.slice(1).map(line),
  ].join("\n");
}

/** The results table: one row per grant and peer. */
export function resultsTable(pairings: Pairing[], ceilingRps: number): string {
  const rows = [
    [
      "grant",
      "peer",
      "ours req/s",
      "peer req/s",
      "ratio (mean ± sd)",
      "ratio min-max",
      "target",
      "verdict",
      "ours p50 / p99 ms (worst p99)",
      "peer p50 / p99 ms",
      "ours / peer of ceiling",
      "CPU µs/req ours / peer",
      "event loop µs/req ours / peer",
    ],
  ];
  for (const p of pairings) {
    const rs = ratios(p);
    const rps = (runs: RunResult[]) => runs.map((r) => r.rps);
    rows.push([
      GRANT_NAMES[p.grant],
      p.peer.name,
      `${f0(mean(rps(p.ours)))} ± ${f0(sd(rps(p.ours)))}`,
      `${f0(mean(rps(p.theirs)))} ± ${f0(sd(rps(p.theirs)))}`,
      `${f2(mean(rs))} ± ${f2(sd(rs))}`,
      `${f2(Math.min(...rs))}-${f2(Math.max(...rs))}`,
      targetText(p.target),
      verdictOf(p),
      `${f1(median(p.ours.map((r) => r.p50)))} / ${f1(median(p.ours.map((r) => r.p99)))} (${f1(Math.max(...p.ours.map((r) => r.p99)))})`,
      `${f1(median(p.theirs.map((r) => r.p50)))} / ${f1(median(p.theirs.map((r) => r.p99)))}`,
      `${f2(mean(rps(p.ours)) / ceilingRps)} / ${f2(mean(rps(p.theirs)) / ceilingRps)}`,
      `${f0(median(p.ours.map(cpu)))} / ${f0(median(p.theirs.map(cpu)))}`,
      `${f0(median(p.ours.map(loop)))} / ${f0(median(p.theirs.map(loop)))}`,
    ]);
  }
  return table(rows);
}

/** One line per grant and peer: the target, the worst round, the verdict; then how many were met. */
export function verdictLines(pairings: Pairing[], setting: RunSetting): string[] {
  const lines = pairings.map((p) => {
    const worst = Math.min(...ratios(p));
    const head = `${p.grant.padEnd(7)} vs ${p.peer.name} (${p.peer.describe(setting)}), ours on ${setting.engine}:`;
    if (p.target.kind === "context")
      return `${head} worst round ${f2(worst)}×; ${p.target.ratio === undefined ? "no target" : `target ≥ ${f2(p.target.ratio)}×`} shown as context (${p.target.why})`;
    return `${head} ≥ ${f2(p.target.ratio)}× in every round: ${verdictOf(p)} (worst round ${f2(worst)}×)`;
  });
  const judged = pairings.filter((p) => p.target.kind === "verdict");
  const met = judged.filter((p) => verdictOf(p) === "MET").length;
  lines.push(
    `targets met: ${met} of ${judged.length}${judged.length < pairings.length ? ` (${pairings.length - judged.length} shown as context)` : ""}`,
  );
  return lines;
}
