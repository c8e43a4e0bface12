/**
 * oasdiff (the Go tool, pinned and installed by scripts/oasdiff.sh) as a function: every change from
 * one OpenAPI document to another, as oasdiff's findings. Nothing is uploaded or fetched (no --open,
 * no --fetch). The project's own reading of the findings is in findings.ts.
 */
import { execFileSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** One oasdiff finding (`oasdiff changelog --format json`); level 3 ERR (breaking), 2 WARN, 1 INFO. */
export type Finding = {
  id: string;
  text: string;
  level: 1 | 2 | 3;
  operation?: string;
  path?: string;
  section?: string;
  /** Set by the project, not oasdiff: the 1.x operation a new major's operation replaces (major.ts). */
  was?: string;
};

/**
 * oasdiff's notes on the version number itself: the gate says what to do instead (declare the next
 * release; a breaking change is a new major or an acknowledgement), and an acknowledged breaking
 * change inside a major would otherwise add "the major version did not increase" to the changelog.
 */
const VERSION_NOTES = new Set(["api-version-not-bumped", "api-major-version-not-bumped"]);

/** The project whose scripts/oasdiff.sh pins the tool (also when the documents are a scratch copy elsewhere). */
const scripts = join(dirname(fileURLToPath(import.meta.url)), "../..");

let binary: string | undefined;
function oasdiff(args: string[]): string {
  binary ??= execFileSync("bash", [join(scripts, "oasdiff.sh"), "--path"], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"],
  }).trim();
  try {
    return execFileSync(binary, args, { encoding: "utf8", maxBuffer: 64 * 1024 * 1024, stdio: ["ignore", "pipe", "pipe"] });
  } catch (err) {
    const e = err as { status?: number; stderr?: string };
    throw new Error(`oasdiff ${args.slice(0, 3).join(" ")} failed (exit ${e.status}): ${String(e.stderr ?? "").trim()}`);
  }
}

const cache = new Map<string, Finding[]>();

/**
 * Every change from `base` to `revision` (file paths), at every level. `--flatten-allof`: a schema
 * regrouped under `allOf` with the same meaning is no change (the error models are `allOf: [Problem]`).
 * The files do not change during one run, so each pair is compared once (the gate and the changelog
 * ask for the same pairs).
 */
export function diff(base: string, revision: string): Finding[] {
  const key = `${base}\0${revision}`;
  const known = cache.get(key);
  if (known) return known.map((f) => ({ ...f }));
  const out = oasdiff(["changelog", base, revision, "--format", "json", "--level", "INFO", "--flatten-allof"]);
  const findings = ((JSON.parse(out || "[]") ?? []) as Finding[])
    .filter((f) => !VERSION_NOTES.has(f.id))
    .map(({ id, text, level, operation, path, section }) => ({ id, text, level, operation, path, section }));
  cache.set(key, findings);
  return findings.map((f) => ({ ...f }));
}
