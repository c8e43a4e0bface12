/**
 * The contract's lifecycle (X-API-14, spec/README.md "Versions and breaking changes"): compares
 * every generated OpenAPI document with its released snapshots in spec/releases/ using oasdiff
 * (scripts/oasdiff.sh installs the pinned Go tool). The rules are in scripts/lib/contract/
 * (gate.ts: what fails; findings.ts: what is breaking here; changelog.ts and report.ts: what people read).
 *
 *   node --import tsx scripts/api-diff.ts check           the gate in `npm test` (`npm run api:check`)
 *   node --import tsx scripts/api-diff.ts changelog       writes CHANGELOG.md (`npm run changelog`)
 *   node --import tsx scripts/api-diff.ts release <doc> [--date YYYY-MM-DD]
 *                                                         records generated/openapi/<doc>.yaml as a release (`npm run release -- <doc>`)
 *   node --import tsx scripts/api-diff.ts diff [--format markdown|html] [--base <git ref>] [<doc>...]
 *                                                         the changes as a pull-request comment (`npm run api:diff -- …`)
 *   --root <dir>   work on a copy of the project's generated/, spec/releases/ and CHANGELOG.md (tests)
 */
import { writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { changelog, prDiff } from "./lib/contract/changelog.ts";
import { check } from "./lib/contract/gate.ts";
import { Project } from "./lib/contract/project.ts";
import { release } from "./lib/contract/release.ts";

const projectRoot = join(dirname(fileURLToPath(import.meta.url)), "..");
const USAGE =
  "usage: api-diff.ts [--root dir] check | changelog | release <document>... [--date YYYY-MM-DD] | diff [--format markdown|html] [--base <git ref>] [<document>...]";

/** Takes `--name value` out of args. */
function option(args: string[], name: string): string | undefined {
  const at = args.indexOf(name);
  if (at < 0) return undefined;
  const value = args[at + 1];
  if (value === undefined || value.startsWith("--")) throw new Error(`${name} needs a value; ${USAGE}`);
  args.splice(at, 2);
  return value;
}

function main(): void {
  const args = process.argv.slice(2);
  const p = new Project(option(args, "--root") ?? projectRoot);
  const [command = "check", ...rest] = args;
  if (command === "check") process.exit(check(p, () => changelog(p)) ? 0 : 1);
  if (command === "changelog" && rest.length === 0) {
    writeFileSync(p.changelogFile, changelog(p));
    console.log(`wrote ${relative(process.cwd(), p.changelogFile) || p.changelogFile}`);
    return;
  }
  if (command === "release") {
    const date = option(rest, "--date") ?? new Date().toISOString().slice(0, 10);
    if (rest.length > 0) {
      for (const doc of rest) release(p, doc, date);
      return;
    }
  }
  if (command === "diff") {
    const format = option(rest, "--format") ?? "markdown";
    const base = option(rest, "--base");
    if (format !== "markdown" && format !== "html") throw new Error(`--format ${format}: markdown or html; ${USAGE}`);
    process.stdout.write(prDiff(p, { format, documents: rest, ...(base ? { base } : {}) }));
    return;
  }
  console.error(USAGE);
  process.exit(2);
}

main();
