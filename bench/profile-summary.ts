/**
 * Where a V8 CPU profile's time goes: self time summed by function, by file (a dependency counts as
 * its package) and by part of the system, over one or more `.cpuprofile` files (Chrome DevTools
 * format, as written by `node --cpu-prof` or the inspector's `Profiler.stop`). Self time is what a
 * sample's top frame was running, so the shares add up to 100%. A native frame (a C++ binding such as
 * better-sqlite3's `run` or a socket's `writev`) has no file: it is charged to the file of its
 * nearest JavaScript caller, and shown in the function table with that caller.
 *
 *   node --import tsx bench/profile-summary.ts <file.cpuprofile | dir>... [--top 25]
 */
import { relative } from "node:path";
import { type Profile, type ProfileNode, profileFiles, readProfile } from "./cpuprofile.ts";

/** A file named the way a reader looks for it: a dependency by its package, ours relative to the tree. */
export function fileOf(url: string): string {
  if (!url) return "(native)";
  const path = url.replace(/^file:\/\//, "");
  const dependency = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(path);
  if (dependency) return `npm:${dependency[1]}`;
  if (path.startsWith("node:")) return path;
  return relative(process.cwd(), path) || path;
}

/** Broad parts of the system, first match wins; the rest is "other". */
const PARTS: Array<[string, (file: string, fn: string) => boolean]> = [
  ["garbage collection", (_f, fn) => fn === "(garbage collector)"],
  ["idle", (_f, fn) => fn === "(idle)"],
  ["program (native, not attributed)", (_f, fn) => fn === "(program)"],
  ["SQLite (better-sqlite3)", (f) => f === "npm:better-sqlite3"],
  ["PostgreSQL client (pg)", (f) => /^npm:pg(-|$)/.test(f) || f === "npm:postgres-array" || f === "npm:pg-protocol"],
  ["knex", (f) => f === "npm:knex" || f === "npm:tarn"],
  ["undici", (f) => f === "npm:undici"],
  ["logging (pino)", (f) => f.startsWith("npm:pino") || f === "npm:sonic-boom"],
  ["HMAC / crypto", (f, fn) => f === "node:internal/crypto/hash" || /^node:internal\/crypto/.test(f) || /Hmac|digest/.test(fn)],
  ["Node net / streams / timers", (f) => /^node:internal\/(net|stream|streams|timers|process\/task_queues)|^node:net|^node:stream/.test(f)],
  ["Node HTTP", (f) => /^node:(_http|http|internal\/http)/.test(f)],
  ["our code", (f) => !f.startsWith("npm:") && !f.startsWith("node:") && f !== "(native)"],
];

export function summarize(profiles: Profile[]) {
  const byFunction = new Map<string, number>();
  const byFile = new Map<string, number>();
  const byPart = new Map<string, number>();
  let total = 0;
  const add = (m: Map<string, number>, k: string, v: number) => m.set(k, (m.get(k) ?? 0) + v);
  for (const profile of profiles) {
    const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
    const parents = new Map<number, ProfileNode>();
    for (const n of profile.nodes) for (const c of n.children ?? []) parents.set(c, n);
    const callerOf = (n: ProfileNode) => {
      let p = parents.get(n.id);
      while (p && !p.callFrame.url) p = parents.get(p.id);
      return p;
    };
    // A sample's duration is the delta to the next sample (the last one gets the median-ish previous).
    for (let i = 0; i < profile.samples.length; i++) {
      const us = profile.timeDeltas[i + 1] ?? profile.timeDeltas[i] ?? 0;
      const node = nodes.get(profile.samples[i]!);
      if (!node) continue;
      const { functionName, url, lineNumber } = node.callFrame;
      const fn = functionName || "(anonymous)";
      const special = /^\((idle|program|garbage collector|root)\)$/.test(fn);
      const caller = url || special ? undefined : callerOf(node);
      const file = caller ? fileOf(caller.callFrame.url) : fileOf(url);
      const where = caller
        ? `(native) called from ${caller.callFrame.functionName || "(anonymous)"} ${file}:${caller.callFrame.lineNumber + 1}`
        : `${file}${url ? `:${lineNumber + 1}` : ""}`;
      add(byFunction, `${fn} ${where}`, us);
      add(byFile, file, us);
      add(byPart, PARTS.find(([, test]) => test(file, fn))?.[0] ?? "other (Node internals, V8 builtins)", us);
      total += us;
    }
  }
  return { total, byFunction, byFile, byPart };
}

function table(title: string, m: Map<string, number>, total: number, top: number, busy: number): string {
  const rows = [...m].sort((a, b) => b[1] - a[1]).slice(0, top);
  const lines = [`\n${title}`, "| self ms | % of samples | % of busy | |", "|---:|---:|---:|---|"];
  for (const [k, us] of rows)
    lines.push(`| ${(us / 1000).toFixed(0)} | ${((100 * us) / total).toFixed(1)} | ${((100 * us) / busy).toFixed(1)} | ${k} |`);
  return lines.join("\n");
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const args = process.argv.slice(2);
  const topAt = args.indexOf("--top");
  const top = topAt >= 0 ? Number(args.splice(topAt, 2)[1]) : 25;
  const paths = profileFiles(args);
  if (!paths.length) {
    console.error("usage: profile-summary.ts <file.cpuprofile | dir>... [--top N]");
    process.exit(2);
  }
  const { total, byFunction, byFile, byPart } = summarize(paths.map(readProfile));
  const busy = total - (byPart.get("idle") ?? 0);
  console.log(
    `${paths.length} profile(s), ${(total / 1e6).toFixed(1)} s sampled, ${(busy / 1e6).toFixed(1)} s busy (${((100 * busy) / total).toFixed(0)}%)`,
  );
  console.log(table("By part", byPart, total, top, busy));
  console.log(table("By file (dependencies by package)", byFile, total, top, busy));
  console.log(table("By function", byFunction, total, top, busy));
}
