/**
 * The contract's lifecycle (X-API-14, spec/README.md "Versions and breaking changes"): compares
 * every generated OpenAPI document with its released snapshots in spec/releases/ using oasdiff
 * (scripts/oasdiff.sh installs the pinned Go tool).
 *
 *   node --import tsx scripts/api-diff.ts check          the gate in `npm test`
 *   node --import tsx scripts/api-diff.ts changelog      writes CHANGELOG.md (`npm run changelog`)
 *   node --import tsx scripts/api-diff.ts release <doc>  records generated/openapi/<doc>.yaml as a release (`npm run release -- <doc>`)
 *   --root <dir>   work on a copy of the project's generated/, spec/releases/ and CHANGELOG.md (tests)
 *
 * The gate, for each document and each version the spec still declares (the latest one is
 * generated/openapi/<doc>.yaml, older ones generated/openapi/versions/<doc>/<version>.yaml):
 * - a released version (its snapshot exists) must not break against its snapshot; if it is the
 *   latest version it must equal it (a changed document declares the next release as the last
 *   `Versions` member), and an older one must not gain operations (a missing @added);
 * - an unreleased version of the same major as the last release must not break against it;
 * - an unreleased new major version may: its breaking changes are listed, that is what the bump says;
 * - "must not break": every oasdiff finding of level ERR is either acknowledged in
 *   spec/releases/acknowledged-breaking.yaml (document, check id, operation, reason: reviewed like
 *   code) or the gate fails; an acknowledgement that matches nothing fails too, so the file stays true;
 * - CHANGELOG.md must be what `npm run changelog` writes now.
 */
import { execFileSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { parse, stringify } from "yaml";
import { z } from "zod";

const projectRoot = join(dirname(fileURLToPath(import.meta.url)), "..");

/** The documents, in the order the changelog lists them (generated/openapi/<name>.yaml). */
export const DOCUMENTS = ["identity", "identity-webhooks", "repository", "email", "email-webhooks"] as const;

/** One oasdiff finding (`oasdiff changelog --format json`); level 3 ERR (breaking), 2 WARN, 1 INFO. */
type Finding = { id: string; text: string; level: 1 | 2 | 3; operation?: string; path?: string; section?: string };

const Acknowledgement = z
  .object({
    document: z.enum(DOCUMENTS),
    /** oasdiff's check id, e.g. `request-property-became-required`. */
    id: z.string().min(1),
    /** `METHOD /path` as oasdiff names it, or `components`/`info`/… for a finding outside paths. */
    operation: z.string().min(1),
    /** Optional: a piece of oasdiff's text that must appear too (a property name), to narrow the match. */
    text: z.string().min(1).optional(),
    /** Why shipping this change in the same major version is right. Reviewed with the change. */
    reason: z.string().min(10),
  })
  .strict();
type Acknowledgement = z.infer<typeof Acknowledgement>;

const compareVersions = (a: string, b: string): number => {
  const pa = a.split(".").map(Number);
  const pb = b.split(".").map(Number);
  for (let i = 0; i < 3; i++) if ((pa[i] ?? 0) !== (pb[i] ?? 0)) return (pa[i] ?? 0) - (pb[i] ?? 0);
  return 0;
};
const major = (v: string) => Number(v.split(".")[0]);
const nextMinor = (v: string) => `${major(v)}.${Number(v.split(".")[1]) + 1}.0`;
const versionOf = (file: string): string => String((parse(readFileSync(file, "utf8")) as { info: { version: string } }).info.version);
const titleOf = (file: string): string => String((parse(readFileSync(file, "utf8")) as { info: { title: string } }).info.title);
const where = (f: Finding) => (f.operation && f.path ? `${f.operation} ${f.path}` : (f.section ?? "document"));

class Project {
  constructor(readonly root: string) {}
  get releasesDir() {
    return join(this.root, "spec/releases");
  }
  get acknowledgementsFile() {
    return join(this.releasesDir, "acknowledged-breaking.yaml");
  }
  get changelogFile() {
    return join(this.root, "CHANGELOG.md");
  }
  latestFile(doc: string) {
    return join(this.root, "generated/openapi", `${doc}.yaml`);
  }
  /** Released versions of a document, oldest first. */
  releases(doc: string): string[] {
    const dir = join(this.releasesDir, doc);
    if (!existsSync(dir)) return [];
    return readdirSync(dir)
      .filter((f) => /^\d+\.\d+\.\d+\.yaml$/.test(f))
      .map((f) => f.replace(/\.yaml$/, ""))
      .sort(compareVersions);
  }
  releaseFile(doc: string, version: string) {
    return join(this.releasesDir, doc, `${version}.yaml`);
  }
  /** Every version of a document that the spec declares, with its generated file, oldest first. */
  generated(doc: string): Array<{ version: string; file: string }> {
    const older = join(this.root, "generated/openapi/versions", doc);
    const out = existsSync(older) ? readdirSync(older).map((f) => ({ version: f.replace(/\.yaml$/, ""), file: join(older, f) })) : [];
    out.push({ version: versionOf(this.latestFile(doc)), file: this.latestFile(doc) });
    return out.sort((a, b) => compareVersions(a.version, b.version));
  }
  acknowledgements(): Acknowledgement[] {
    if (!existsSync(this.acknowledgementsFile)) return [];
    const raw = parse(readFileSync(this.acknowledgementsFile, "utf8")) as { acknowledged?: unknown } | null;
    return z.array(Acknowledgement).parse(raw?.acknowledged ?? []);
  }
}

let oasdiffBinary: string | undefined;
function oasdiff(args: string[]): string {
  oasdiffBinary ??= execFileSync("bash", [join(projectRoot, "scripts/oasdiff.sh"), "--path"], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"],
  }).trim();
  try {
    return execFileSync(oasdiffBinary, args, { encoding: "utf8", maxBuffer: 64 * 1024 * 1024, stdio: ["ignore", "pipe", "pipe"] });
  } catch (err) {
    const e = err as { status?: number; stderr?: string };
    throw new Error(`oasdiff ${args.slice(0, 3).join(" ")} failed (exit ${e.status}): ${String(e.stderr ?? "").trim()}`);
  }
}

/**
 * Every change from `base` to `revision`. `--flatten-allof`: a schema regrouped under `allOf`
 * with the same meaning is no change. Nothing is uploaded or fetched (no --open, no --fetch).
 */
export function diff(base: string, revision: string): Finding[] {
  const out = oasdiff(["changelog", base, revision, "--format", "json", "--level", "INFO", "--flatten-allof"]);
  const findings = (JSON.parse(out || "[]") ?? []) as Finding[];
  // oasdiff's own "version not bumped" note: the gate below says what to do instead.
  return findings.filter((f) => f.id !== "api-version-not-bumped");
}

type Comparison = {
  doc: string;
  version: string;
  file: string;
  base?: string;
  baseFile?: string;
  /** released: regenerated release; same-major: unreleased, must not break; new-major: may break. */
  kind: "released" | "same-major" | "new-major" | "first";
};

function comparisons(p: Project, doc: string): Comparison[] {
  const released = p.releases(doc);
  return p.generated(doc).map(({ version, file }) => {
    if (released.includes(version)) return { doc, version, file, base: version, baseFile: p.releaseFile(doc, version), kind: "released" };
    const before = released.filter((r) => compareVersions(r, version) < 0).at(-1);
    if (!before) return { doc, version, file, kind: "first" };
    return {
      doc,
      version,
      file,
      base: before,
      baseFile: p.releaseFile(doc, before),
      kind: major(version) > major(before) ? "new-major" : "same-major",
    };
  });
}

function matches(a: Acknowledgement, doc: string, f: Finding): boolean {
  return a.document === doc && a.id === f.id && a.operation === where(f) && (a.text === undefined || f.text.includes(a.text));
}

function check(p: Project): boolean {
  const acks = p.acknowledgements();
  const used = new Set<Acknowledgement>();
  let ok = true;
  const rel = (f: string) => relative(p.root, f);
  for (const doc of DOCUMENTS) {
    const latest = versionOf(p.latestFile(doc));
    for (const c of comparisons(p, doc)) {
      if (!c.baseFile) {
        console.log(`${doc} ${c.version}: not released yet (no snapshot in ${rel(join(p.releasesDir, doc))}/), nothing to compare`);
        continue;
      }
      const findings = diff(c.baseFile, c.file);
      const breaking = findings.filter((f) => f.level === 3);
      const warnings = findings.filter((f) => f.level === 2);
      const label = `${doc} ${c.version} against ${c.kind === "released" ? "its release" : `release ${c.base}`}`;
      if (c.kind === "new-major") {
        console.log(`${label}: new major version, ${breaking.length} breaking change(s) ship with it (see CHANGELOG.md)`);
        continue;
      }
      const unacknowledged = breaking.filter((f) => {
        const a = acks.find((x) => matches(x, doc, f));
        if (a) used.add(a);
        return !a;
      });
      console.log(
        `${label}: ${breaking.length} breaking (${breaking.length - unacknowledged.length} acknowledged), ${warnings.length} to check, ${findings.length - breaking.length - warnings.length} other`,
      );
      for (const f of warnings) console.log(`  check  ${f.id}  ${where(f)}: ${f.text}`);
      if (c.kind === "released" && findings.length > 0) {
        if (c.version === latest) {
          // The document moved on from its last release: the next release must be declared now, so
          // what the service serves never claims a released number with other content.
          ok = false;
          console.error(
            `${doc}: ${c.version} is released and ${rel(c.file)} differs from it (${findings.length} change(s)): declare the next release` +
              ` as the last \`Versions\` member (${nextMinor(c.version)} for additions and corrections, ${major(c.version) + 1}.0.0 for breaking changes), spec/README.md`,
          );
        } else {
          // An older version regenerated from today's TypeSpec: an operation in it that its release lacks is a missing @added.
          const added = findings.filter((f) => f.id === "endpoint-added");
          for (const f of added) {
            ok = false;
            console.error(
              `  NOT VERSIONED  ${where(f)} appears in ${doc} ${c.version}: mark it @added(Versions.<the version that adds it>)`,
            );
          }
          console.log(
            `  info   ${findings.length - added.length} change(s) TypeSpec applies to every version (descriptions, examples, error responses) show in ${c.version} too; they ship with ${latest}`,
          );
        }
      }
      if (unacknowledged.length === 0) continue;
      ok = false;
      for (const f of unacknowledged) console.error(`  BREAKING  ${f.id}  ${where(f)}: ${f.text}`);
      console.error(
        `${doc}: ${unacknowledged.length} unacknowledged breaking change(s) against ${c.base}. Either undo them, ship them as a new major version` +
          ` (a \`Versions\` member ${major(c.version) + 1}.0.0 with @added/@removed/@madeOptional…, spec/README.md), or acknowledge each in` +
          ` ${rel(p.acknowledgementsFile)} with {document: ${doc}, id, operation, reason} after review.`,
      );
    }
  }
  for (const a of acks.filter((x) => !used.has(x))) {
    ok = false;
    console.error(
      `${rel(p.acknowledgementsFile)}: acknowledgement {document: ${a.document}, id: ${a.id}, operation: ${a.operation}} matches no breaking change: remove it`,
    );
  }
  const fresh = changelog(p);
  if (!existsSync(p.changelogFile) || readFileSync(p.changelogFile, "utf8") !== fresh) {
    ok = false;
    console.error(`${rel(p.changelogFile)} is not what the documents say now: run npm run changelog and commit it`);
  }
  return ok;
}

const LEVELS: Array<[Finding["level"], string]> = [
  [3, "Breaking"],
  [2, "To check (may break some clients)"],
  [1, "Changes"],
];

function section(heading: string, findings: Finding[]): string {
  let out = `### ${heading}\n\n`;
  if (findings.length === 0) return `${out}No change to the contract.\n\n`;
  for (const [level, name] of LEVELS) {
    const of = findings.filter((f) => f.level === level);
    if (of.length === 0) continue;
    out += `${name}:\n\n`;
    for (const f of of) out += `- \`${where(f)}\`: ${f.text.replace(/\n/g, " ")} (\`${f.id}\`)\n`;
    out += "\n";
  }
  return out;
}

/** CHANGELOG.md: per document, what is not released yet, then each release against the one before. */
function changelog(p: Project): string {
  let out =
    "# Changelog of the API contracts\n\n" +
    "Written by `npm run changelog` (scripts/api-diff.ts) from oasdiff's comparison of the generated documents " +
    "with the released snapshots in `spec/releases/`; do not edit by hand. The versioning policy is in spec/README.md " +
    '("Versions and breaking changes"); `npm test` fails when this file is out of date.\n\n';
  for (const doc of DOCUMENTS) {
    out += `## ${titleOf(p.latestFile(doc))} (\`${doc}\`)\n\n`;
    const released = p.releases(doc);
    const latest = versionOf(p.latestFile(doc));
    for (const c of comparisons(p, doc).reverse()) {
      if (!c.baseFile) continue;
      if (c.kind === "released" && c.version !== latest) continue; // its changes are in the next version's section
      const findings = diff(c.baseFile, c.file);
      if (c.kind === "released") {
        // Changes made to the released latest version (the gate fails on them): shown until the version moves.
        if (findings.length > 0)
          out += section(`Not released yet: changes to ${c.version} (give them a new version before the release)`, findings);
        continue;
      }
      out += section(
        `${c.version}, not released yet (against ${c.base}${c.kind === "new-major" ? ", a new major version" : ""})`,
        findings,
      );
    }
    for (let i = released.length - 1; i >= 0; i--) {
      const v = released[i]!;
      if (i === 0) out += `### ${v}\n\nThe first released version (\`spec/releases/${doc}/${v}.yaml\`).\n\n`;
      else out += section(v, diff(p.releaseFile(doc, released[i - 1]!), p.releaseFile(doc, v)));
    }
  }
  return `${out.trimEnd()}\n`;
}

/** Records the generated latest version of a document as released; its acknowledgements are spent. */
function release(p: Project, doc: string): void {
  if (!(DOCUMENTS as readonly string[]).includes(doc)) throw new Error(`unknown document ${doc}; one of ${DOCUMENTS.join(", ")}`);
  const file = p.latestFile(doc);
  const version = versionOf(file);
  const target = p.releaseFile(doc, version);
  if (existsSync(target)) {
    if (readFileSync(target).equals(readFileSync(file))) {
      console.log(`${doc} ${version} is released already`);
      return;
    }
    throw new Error(`${doc} ${version} is released with other content: a released version never changes; add a new Versions member`);
  }
  mkdirSync(dirname(target), { recursive: true });
  copyFileSync(file, target);
  const remaining = p.acknowledgements().filter((a) => a.document !== doc);
  if (existsSync(p.acknowledgementsFile)) writeAcknowledgements(p, remaining);
  writeFileSync(p.changelogFile, changelog(p));
  console.log(`released ${doc} ${version}: ${relative(p.root, target)}; CHANGELOG.md updated`);
}

function writeAcknowledgements(p: Project, acks: Acknowledgement[]): void {
  const header = readFileSync(p.acknowledgementsFile, "utf8")
    .split("\n")
    .filter((l) => l.startsWith("#"))
    .join("\n");
  writeFileSync(p.acknowledgementsFile, `${header}\n${stringify({ acknowledged: acks }, { lineWidth: 0 })}`);
}

function main(): void {
  const args = process.argv.slice(2);
  const rootAt = args.indexOf("--root");
  const root = rootAt >= 0 ? args.splice(rootAt, 2)[1]! : projectRoot;
  const [command = "check", ...rest] = args;
  const p = new Project(root);
  if (command === "check") process.exit(check(p) ? 0 : 1);
  if (command === "changelog") {
    writeFileSync(p.changelogFile, changelog(p));
    console.log(`wrote ${relative(process.cwd(), p.changelogFile) || p.changelogFile}`);
    return;
  }
  if (command === "release" && rest.length > 0) {
    for (const doc of rest) release(p, doc);
    return;
  }
  console.error("usage: api-diff.ts [--root dir] check | changelog | release <document>...");
  process.exit(2);
}

main();
