/**
 * Where the event loop's time goes, from the CPU profiles `BENCH_PROFILE=ours` writes (one per
 * timed run): each sample is given to the part its stack is in, found from the sampled frame
 * towards the root (the first frame that matches a part decides, so a native call counts for the
 * module that made it), and the parts are shown as shares of the busy (non-idle) time.
 *
 *   node --import tsx bench/token/profile-shares.ts <dir or .cpuprofile files> [--functions N]
 *
 * Not timed and not part of the benchmark: a reading aid for the token results in bench/results/.
 */
import { fileURLToPath } from "node:url";
import { type CallFrame, profileFiles, readProfile } from "../cpuprofile.ts";

/** The parts, tried in this order on each frame; the first whose test matches names the frame's part. */
const PARTS: Array<[string, (f: CallFrame) => boolean]> = [
  ["garbage collection", (f) => f.functionName === "(garbage collector)"],
  ["V8 (program)", (f) => f.functionName === "(program)"],
  [
    "SQLite (statements, savepoints, COMMIT)",
    (f) => /better-sqlite3|\/storage\/sqlite\/|\/storage\/postgres\/|\/identity\/storage\/|knex|tarn/.test(f.url),
  ],
  // node-postgres parses each reply in a socket's read callback: without this part, its time would count as Node's.
  [
    "PostgreSQL driver (pg, pg-protocol)",
    (f) => /node_modules\/(pg|pg-protocol|pg-pool|pg-types|pg-connection-string|postgres-[a-z]+)\//.test(f.url),
  ],
  [
    "openapi-backend (routing, parsing, Ajv validation)",
    (f) => /node_modules\/(openapi-backend|ajv|lodash|bath-es5|openapi-types)/.test(f.url),
  ],
  [
    "the log line (pino)",
    (f) => /node_modules\/(pino|@pinojs|sonic-boom|fast-redact|quick-format)/.test(f.url) || /\/logger\.ts/.test(f.url),
  ],
  ["metrics (prom-client)", (f) => /node_modules\/prom-client|\/metrics\.ts/.test(f.url)],
  ["signing hand-off (worker messages)", (f) => /\/jwt-signer\.ts/.test(f.url) || f.functionName === "postMessage"],
  [
    "crypto (HMAC, hashes, AES, random)",
    (f) => /^node:internal\/crypto|\/security\/|\/secrets\.ts|\/client-secrets\.ts|\/pkce\.ts/.test(f.url),
  ],
  [
    "form body parse (body.ts, qs, raw-body)",
    (f) => /\/http\/body\.ts|node_modules\/(qs|raw-body|type-is|content-type|iconv-lite|mime-types)/.test(f.url),
  ],
  ["token endpoint and grants (handlers, domain)", (f) => /\/handlers\//.test(f.url)],
  ["our Koa middleware (server/http)", (f) => /\/server\/http\//.test(f.url)],
  ["Koa", (f) => /node_modules\/(koa|@koa|koa-compose|delegates|on-finished|statuses|accepts|fresh|vary|cookies|http-errors)/.test(f.url)],
  [
    "Node HTTP, streams, timers, promises",
    (f) => /^node:/.test(f.url) || /runMicrotasks|processTicksAndRejections|writev|writeString|writeBuffer/.test(f.functionName),
  ],
];

/** A frame's file relative to the repository (and node_modules/ left out). */
const ROOT = new RegExp(
  `^file://${fileURLToPath(new URL("../..", import.meta.url)).replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}(node_modules/)?`,
);

function main(): void {
  const argv = process.argv.slice(2);
  const fnIndex = argv.indexOf("--functions");
  const topFunctions = fnIndex >= 0 ? Number(argv[fnIndex + 1]) : 0;
  const files = profileFiles(argv.filter((_, i) => fnIndex < 0 || (i !== fnIndex && i !== fnIndex + 1)));
  if (!files.length) throw new Error("usage: profile-shares.ts <dir or .cpuprofile files> [--functions N]");
  const parts = new Map<string, number>();
  const functions = new Map<string, number>();
  let busy = 0;
  let idle = 0;
  for (const file of files) {
    const profile = readProfile(file);
    const byId = new Map(profile.nodes.map((n) => [n.id, n]));
    const parent = new Map<number, number>();
    for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
    const partOf = new Map<number, string>();
    const classify = (id: number): string => {
      const known = partOf.get(id);
      if (known) return known;
      const frame = byId.get(id)!.callFrame;
      const own = PARTS.find(([, test]) => test(frame))?.[0];
      const up = parent.get(id);
      const part = own ?? (up === undefined ? "other" : classify(up));
      partOf.set(id, part);
      return part;
    };
    for (const [i, id] of profile.samples.entries()) {
      const dt = profile.timeDeltas[i] ?? 0;
      const frame = byId.get(id)!.callFrame;
      if (frame.functionName === "(idle)") {
        idle += dt;
        continue;
      }
      // The profiler's own session (the last sample of a run) is not the server's work.
      if (frame.url === "node:inspector" || frame.url.startsWith("node:internal/inspector")) continue;
      busy += dt;
      const part = classify(id);
      parts.set(part, (parts.get(part) ?? 0) + dt);
      const name = `${frame.functionName || "(anonymous)"} ${frame.url.replace(ROOT, "") || "(native)"}`;
      functions.set(name, (functions.get(name) ?? 0) + dt);
    }
  }
  const pct = (t: number) => `${((100 * t) / busy).toFixed(1)}%`;
  console.log(`${files.length} profiles: busy ${(busy / 1e6).toFixed(2)} s, idle ${(idle / 1e6).toFixed(2)} s\n`);
  console.log("| part | share of busy time |\n|---|---:|");
  for (const [part, t] of [...parts].sort((a, b) => b[1] - a[1])) console.log(`| ${part} | ${pct(t)} |`);
  if (topFunctions) {
    console.log(`\nself time, top ${topFunctions} functions:`);
    for (const [name, t] of [...functions].sort((a, b) => b[1] - a[1]).slice(0, topFunctions))
      console.log(`${pct(t).padStart(6)}  ${name}`);
  }
}

main();
