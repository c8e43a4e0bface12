/**
 * How the services start without a transpiler (docs/adr/0011-runtime-without-a-transpiler.md): the time
 * from spawning the process until all three services answer `/ready` 200, and its memory, for each way
 * of running the TypeScript sources.
 *
 *   node --import tsx bench/runtime.ts [--rounds=5] [--root=<tree>]
 *
 * Ways (each started `rounds` times, the ways taking turns so that a busy moment hits all of them):
 * - tsx, warm cache: `node --import tsx app/main.ts` (how `npm start` ran before), its transform cache filled;
 * - tsx, cold cache: the same with an empty cache (a fresh container: tsx caches under TMPDIR);
 * - type stripping: `node app/main.ts` (Node's own, what the image and the unit run);
 * - type stripping, compile cache: the same with NODE_COMPILE_CACHE already filled;
 * - built JavaScript: the sources compiled once by tsc (`rewriteRelativeImportExtensions`, source maps)
 *   into a temporary tree, `node --enable-source-maps dist/app/main.js`, and without that flag.
 *
 * Every start is on a copy of one data directory that has been started once (migrated, signing keys
 * made), on SQLite: a restart, the common case. Memory is the process's resident set (VmRSS) when all
 * three are ready, then after 300 requests to each service, and its peak (VmHWM). CPU time is the node
 * process's own (all its threads): under tsx, esbuild's transform service is a child process whose time
 * is not counted, which matters only with a cold cache. Prints a Markdown table (medians, with the
 * range) and the load average before and after; nothing is written.
 * `--root` measures another checkout of the project (its node_modules must be installed).
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { freePort } from "../support/free-port.ts";

const args = new Map(process.argv.slice(2).map((a) => a.replace(/^--/, "").split("=") as [string, string]));
const ROUNDS = Number(args.get("rounds") ?? 5);
const ROOT = resolve(args.get("root") ?? join(import.meta.dirname, ".."));
const SERVICES = ["identity", "repository", "email"] as const;
const REQUESTS_PER_SERVICE = 300;

interface Way {
  name: string;
  cwd: string;
  argv: string[];
  /** Extra environment of each start (made fresh per start when it is a function). */
  env: () => Record<string, string>;
}

interface Sample {
  readyMs: number;
  /** CPU time of the process (every thread, user + system) until ready: less disturbed by other work than the wall time. */
  cpuMs: number;
  rssReadyMiB: number;
  rssAfterMiB: number;
  peakMiB: number;
}

const scratch = mkdtempSync(join(tmpdir(), "bench-runtime-"));
/** The server being measured, ended with the benchmark on a signal. */
let running: ChildProcess | undefined;
for (const signal of ["SIGINT", "SIGTERM"] as const)
  process.on(signal, () => {
    running?.kill("SIGKILL");
    rmSync(scratch, { recursive: true, force: true });
    process.exit(130);
  });

/** The sources compiled by tsc into `<scratch>/dist`, laid out as the checkout is (generated/ and web/ beside them). */
function buildJavaScript(): string {
  const dist = join(scratch, "dist");
  writeFileSync(
    join(scratch, "tsconfig.build.json"),
    JSON.stringify({
      extends: join(ROOT, "tsconfig.json"),
      compilerOptions: {
        noEmit: false,
        outDir: dist,
        rootDir: ROOT,
        sourceMap: true,
        rewriteRelativeImportExtensions: true,
        typeRoots: [join(ROOT, "node_modules/@types")],
      },
      include: ["app", "server", "handlers", "generated/types"].map((d) => join(ROOT, d)),
    }),
  );
  const started = Date.now();
  execFileSync(process.execPath, [join(ROOT, "node_modules/typescript/bin/tsc"), "-p", join(scratch, "tsconfig.build.json")], {
    stdio: "inherit",
  });
  console.error(`tsc build: ${Date.now() - started} ms`);
  cpSync(join(ROOT, "generated/openapi"), join(dist, "generated/openapi"), { recursive: true });
  cpSync(join(ROOT, "web"), join(dist, "web"), { recursive: true });
  cpSync(join(ROOT, "package.json"), join(dist, "package.json"));
  symlinkSync(join(ROOT, "node_modules"), join(dist, "node_modules"));
  return dist;
}

/** utime + stime of the whole process (all its threads), in ms (clock ticks of 10 ms). */
function cpuTime(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8")
    .replace(/^.*\) /, "")
    .split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

function vm(pid: number, field: "VmRSS" | "VmHWM"): number {
  const line = readFileSync(`/proc/${pid}/status`, "utf8").match(new RegExp(`^${field}:\\s+(\\d+) kB`, "m"));
  return line ? Number(line[1]) / 1024 : Number.NaN;
}

async function answers(url: string): Promise<boolean> {
  try {
    const res = await fetch(url);
    await res.arrayBuffer();
    return res.status === 200;
  } catch {
    return false;
  }
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once("exit", r));
  child.kill("SIGINT");
  const killer = setTimeout(() => child.kill("SIGKILL"), 30_000);
  await exited;
  clearTimeout(killer);
}

/** One start of `way` on a copy of `template` (on `template` itself when `inPlace`), stopped once measured. */
async function startOnce(way: Way, template: string, inPlace = false): Promise<Sample> {
  const dataDir = inPlace ? template : mkdtempSync(join(scratch, "data-"));
  if (!inPlace) cpSync(template, dataDir, { recursive: true });
  const ports = { identity: await freePort(), repository: await freePort(), email: await freePort() };
  const env = {
    PATH: process.env.PATH ?? "",
    HOME: process.env.HOME ?? scratch,
    DATA_DIR: dataDir,
    IDENTITY_PORT: String(ports.identity),
    REPOSITORY_PORT: String(ports.repository),
    EMAIL_PORT: String(ports.email),
    EMAIL_INBOUND_SMTP_PORT: "0",
    SHUTDOWN_DELAY_MS: "0",
    LOG_LEVEL: "warn",
    ...way.env(),
  };
  let stderr = "";
  const started = performance.now();
  const child = spawn(process.execPath, way.argv, { cwd: way.cwd, env, stdio: ["ignore", "ignore", "pipe"] });
  running = child;
  child.stderr!.on("data", (c: Buffer) => (stderr += c.toString()));
  try {
    const pending = new Set<(typeof SERVICES)[number]>(SERVICES);
    while (pending.size) {
      if (child.exitCode !== null) throw new Error(`${way.name}: exited with ${child.exitCode}\n${stderr}`);
      for (const s of [...pending]) if (await answers(`http://127.0.0.1:${ports[s]}/ready`)) pending.delete(s);
      if (performance.now() - started > 120_000) throw new Error(`${way.name}: not ready in 120 s\n${stderr}`);
      if (pending.size) await new Promise((r) => setTimeout(r, 5));
    }
    const readyMs = performance.now() - started;
    const cpuMs = cpuTime(child.pid!);
    const rssReadyMiB = vm(child.pid!, "VmRSS");
    for (const s of SERVICES)
      for (let i = 0; i < REQUESTS_PER_SERVICE; i += 10)
        await Promise.all(Array.from({ length: 10 }, () => answers(`http://127.0.0.1:${ports[s]}/health`)));
    return { readyMs, cpuMs, rssReadyMiB, rssAfterMiB: vm(child.pid!, "VmRSS"), peakMiB: vm(child.pid!, "VmHWM") };
  } finally {
    await stop(child);
    if (!inPlace) rmSync(dataDir, { recursive: true, force: true });
  }
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
const cell = (xs: number[], digits = 0) =>
  `${median(xs).toFixed(digits)} (${Math.min(...xs).toFixed(digits)}–${Math.max(...xs).toFixed(digits)})`;

async function main(): Promise<void> {
  const dist = buildJavaScript();
  const compileCache = join(scratch, "compile-cache");
  const tsxCache = join(scratch, "tsx-warm");
  const ways: Way[] = [
    {
      name: "tsx, warm cache (how `npm start` ran before ADR 0011)",
      cwd: ROOT,
      argv: ["--import", "tsx", "app/main.ts"],
      env: () => ({ TMPDIR: tsxCache }),
    },
    {
      name: "tsx, cold cache",
      cwd: ROOT,
      argv: ["--import", "tsx", "app/main.ts"],
      env: () => ({ TMPDIR: mkdtempSync(join(scratch, "tsx-cold-")) }),
    },
    { name: "type stripping: `node app/main.ts`", cwd: ROOT, argv: ["app/main.ts"], env: () => ({}) },
    { name: "type stripping, compile cache filled", cwd: ROOT, argv: ["app/main.ts"], env: () => ({ NODE_COMPILE_CACHE: compileCache }) },
    { name: "built JavaScript, `--enable-source-maps`", cwd: dist, argv: ["--enable-source-maps", "app/main.js"], env: () => ({}) },
    { name: "built JavaScript, no flag", cwd: dist, argv: ["app/main.js"], env: () => ({}) },
  ];
  // The data directory every start copies: migrated, its signing keys made by one start. That start
  // fills the compile cache; one more fills tsx's.
  const template = mkdtempSync(join(scratch, "template-"));
  await startOnce(ways[3]!, template, true);
  await startOnce(ways[0]!, template);
  const load = loadavg()
    .map((l) => l.toFixed(2))
    .join(", ");
  const samples = new Map<string, Sample[]>(ways.map((w) => [w.name, []]));
  for (let round = 0; round < ROUNDS; round++)
    for (const way of ways) {
      const s = await startOnce(way, template);
      samples.get(way.name)!.push(s);
      console.error(
        `round ${round + 1} ${way.name}: ready ${s.readyMs.toFixed(0)} ms, CPU ${s.cpuMs} ms, RSS ${s.rssReadyMiB.toFixed(0)} MiB`,
      );
    }
  const loadAfter = loadavg()
    .map((l) => l.toFixed(2))
    .join(", ");
  console.log(`Node ${process.version}, ${ROUNDS} starts of each way, load average ${load} before, ${loadAfter} after.\n`);
  console.log("| way | to all three /ready, ms | CPU until ready, ms | RSS at ready, MiB | RSS after 900 requests, MiB | peak RSS, MiB |");
  console.log("|---|---|---|---|---|---|");
  for (const way of ways) {
    const s = samples.get(way.name)!;
    console.log(
      `| ${way.name} | ${cell(s.map((x) => x.readyMs))} | ${cell(s.map((x) => x.cpuMs))} | ${cell(s.map((x) => x.rssReadyMiB))} | ${cell(s.map((x) => x.rssAfterMiB))} | ${cell(s.map((x) => x.peakMiB))} |`,
    );
  }
}

try {
  await main();
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
