/**
 * What deploy/Dockerfile says, read for the tests that check it against the rest of the project
 * (test/deploy/files.test.ts) and start the services as its image does (test/deploy/start.test.ts).
 * A small reader of the instructions the file uses, not a full Dockerfile parser: line continuations,
 * comments, `KEY=value` ENV lists and exec-form (JSON array) commands.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";

export interface Instruction {
  keyword: string;
  args: string;
  line: number;
}

export interface FinalStage {
  from: string;
  workdir: string;
  env: Record<string, string>;
  /** The sources copied from the build context (not `--from=` another stage): [source, destination]. */
  copies: Array<[string, string]>;
  user: string | undefined;
  volumes: string[];
  exposed: number[];
  entrypoint: string[];
  cmd: string[];
  /** The HEALTHCHECK's options (`--interval` …) and its exec-form command. */
  healthcheck: { options: Record<string, string>; command: string[] } | undefined;
  stopSignal: string | undefined;
}

export function readInstructions(file: string): Instruction[] {
  const lines = readFileSync(file, "utf8").split("\n");
  const out: Instruction[] = [];
  let pending = "";
  let start = 0;
  for (const [i, raw] of lines.entries()) {
    if (!pending && (raw.trim() === "" || raw.trimStart().startsWith("#"))) continue;
    if (!pending) start = i + 1;
    const continued = raw.endsWith("\\");
    pending += (pending ? " " : "") + (continued ? raw.slice(0, -1) : raw).trim();
    if (continued) continue;
    const [keyword, ...rest] = pending.split(/\s+/);
    out.push({ keyword: keyword!.toUpperCase(), args: rest.join(" "), line: start });
    pending = "";
  }
  return out;
}

/** An exec-form command (`["node", "app/main.ts"]`); a shell-form one is an error: it would run under /bin/sh. */
export function execForm(instruction: Instruction | undefined, args = instruction?.args): string[] {
  if (!instruction || args === undefined) return [];
  try {
    const parsed = JSON.parse(args) as unknown;
    if (Array.isArray(parsed) && parsed.every((a) => typeof a === "string")) return parsed;
  } catch {
    // shell form
  }
  throw new Error(`Dockerfile line ${instruction.line}: ${instruction.keyword} is not in exec form (a JSON array): ${args}`);
}

/** `KEY=value KEY2="value 2"` of ENV and of HEALTHCHECK options. */
function assignments(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of text.matchAll(/([A-Za-z_][A-Za-z0-9_-]*)=("([^"]*)"|\S*)/g)) out[m[1]!] = m[3] ?? m[2]!;
  return out;
}

/** The last stage: what the image is. */
export function finalStage(file: string): FinalStage {
  const all = readInstructions(file);
  const lastFrom = all.map((i) => i.keyword).lastIndexOf("FROM");
  const stage = all.slice(lastFrom);
  const args = Object.fromEntries(
    all
      .slice(
        0,
        all.findIndex((i) => i.keyword === "FROM"),
      )
      .filter((i) => i.keyword === "ARG")
      .map((i) => i.args.split("=") as [string, string]),
  );
  const one = (keyword: string) => stage.filter((i) => i.keyword === keyword).at(-1);
  const health = one("HEALTHCHECK");
  let healthcheck: FinalStage["healthcheck"];
  if (health) {
    const at = health.args.indexOf(" CMD ");
    healthcheck = {
      options: assignments(health.args.slice(0, at).replace(/--/g, "")),
      command: execForm(health, health.args.slice(at + 5).trim()),
    };
  }
  return {
    from: stage[0]!.args.replace(/\$\{?(\w+)\}?/g, (_, name: string) => args[name] ?? ""),
    workdir: one("WORKDIR")?.args ?? "/",
    env: Object.assign({}, ...stage.filter((i) => i.keyword === "ENV").map((i) => assignments(i.args))),
    copies: stage
      .filter((i) => i.keyword === "COPY" && !i.args.startsWith("--from="))
      .flatMap((i) => {
        const parts = i.args.split(/\s+/);
        const destination = parts.at(-1)!;
        return parts.slice(0, -1).map((source): [string, string] => [source, destination]);
      }),
    user: one("USER")?.args,
    volumes: stage.filter((i) => i.keyword === "VOLUME").flatMap((i) => JSON.parse(i.args) as string[]),
    exposed: stage.filter((i) => i.keyword === "EXPOSE").flatMap((i) => i.args.split(/\s+/).map(Number)),
    entrypoint: execForm(one("ENTRYPOINT")),
    cmd: execForm(one("CMD")),
    healthcheck,
    stopSignal: one("STOPSIGNAL")?.args,
  };
}

export const ROOT = join(import.meta.dirname, "../..");
export const DOCKERFILE = join(ROOT, "deploy/Dockerfile");
