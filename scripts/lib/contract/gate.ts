/**
 * The gate (`npm run api:check`, a step of `npm test`; X-API-14, spec/README.md "Versions and
 * breaking changes"). For each document and each version the spec still declares:
 * - a released version must not break against its snapshot; if it is the latest version it must
 *   equal it (a changed document declares the next release as the last `Versions` member), and an
 *   older one, regenerated, must equal it but for what TypeSpec applies to every version
 *   (descriptions, examples, error responses): an operation, parameter, property or enum member
 *   it gained is a missing `@added` (NOT VERSIONED);
 * - an unreleased version must not break against the last release: within its major that is the
 *   rule itself, and a new major leaves the released paths as they are and serves what it changes
 *   under its own prefix (`/v2/…`) beside them;
 * - "must not break": every breaking finding (oasdiff ERR, and a property removed from a sealed
 *   request body, findings.ts) is acknowledged in spec/releases/acknowledged-breaking.yaml
 *   (document, check id, operation, reason: reviewed like code) or the gate fails; an
 *   acknowledgement that matches nothing fails too, so the file stays true;
 * - CHANGELOG.md must be what `npm run changelog` writes now.
 * Each finding is printed once per document, with the versions it shows in.
 */
import { existsSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { covers } from "./acknowledgements.ts";
import { comparisons, findingsOf } from "./comparisons.ts";
import { appliesToEveryVersion, where } from "./findings.ts";
import { movedFindings } from "./major.ts";
import type { Finding } from "./oasdiff.ts";
import { type Acknowledgement, DOCUMENTS, major, nextMinor, type Project, versionOf } from "./project.ts";

const LEGEND = [
  'api:check (X-API-14): each version of each document that the spec declares, against its release in spec/releases/ (oasdiff; spec/README.md "Versions and breaking changes").',
  "  BREAKING       breaks clients of the release (oasdiff ERR; also an optional field removed from a sealed request body): fails, unless acknowledged in spec/releases/acknowledged-breaking.yaml",
  "  check          may break some clients (oasdiff WARN, e.g. a new enum value in a response): read it; it does not fail the gate",
  "  NOT VERSIONED  an older version, regenerated, shows what its release lacks: fails; mark it @added(Versions.<the version that adds it>)",
  "  other, info    breaks no client (additions, descriptions, error responses): counted here, listed in CHANGELOG.md",
];

/** Where a new major serves what it changes, per document (spec/README.md "Where the new major lives"). */
const WHERE_A_MAJOR_LIVES: Record<string, string> = {
  repository: 'under /v2/… beside the released paths (spec/README.md, "A repository 2.0, worked through")',
  email: "under /v2/… beside /v1/… (spec/README.md, EM-11, X-EM-18)",
  identity: "under /api/v2/… beside /api/… (spec/README.md, X-ID-VER-1); OAuth and OpenID Connect endpoints never move",
  "identity-webhooks": "as a new event type (`user.updated.v2`), never as a changed delivery (spec/README.md)",
  "email-webhooks": "as a new event type, never as a changed delivery (spec/README.md)",
};

type Label = "BREAKING" | "NOT VERSIONED" | "check";
const ORDER: Label[] = ["BREAKING", "NOT VERSIONED", "check"];

const listed = (versions: string[]) =>
  versions.length === 1 ? versions[0]! : `${versions.slice(0, -1).join(", ")} and ${versions.at(-1)}`;

export function check(p: Project, freshChangelog: () => string): boolean {
  const acks = p.acknowledgements();
  const used = new Set<Acknowledgement>();
  let ok = true;
  const rel = (f: string) => relative(p.root, f);
  const ackFile = rel(p.acknowledgementsFile);
  for (const line of LEGEND) console.log(line);
  for (const doc of DOCUMENTS) {
    console.log();
    const latest = versionOf(p.latestFile(doc));
    // Each finding once per document and label, with the versions it shows in.
    const flagged = new Map<string, { label: Label; f: Finding; versions: string[] }>();
    const flag = (label: Label, f: Finding, version: string) => {
      const key = [label, f.id, where(f), f.text].join("\0");
      const known = flagged.get(key) ?? { label, f, versions: [] };
      known.versions.push(version);
      flagged.set(key, known);
    };
    const failures: string[] = [];
    const unacknowledged = new Map<string, string>(); // a breaking finding within a major → the release it breaks
    const majorBreaks: Array<{ version: string; base: string; operations: Set<string> }> = [];
    let notVersioned: string[] = [];
    for (const c of comparisons(p, doc)) {
      if (!c.baseFile || !c.base) {
        console.log(`${doc} ${c.version}: not released yet (no snapshot in ${rel(join(p.releasesDir, doc))}/), nothing to compare`);
        continue;
      }
      const findings = findingsOf(c.baseFile, c.file);
      const breaking = findings.filter((f) => f.level === 3);
      const open = breaking.filter((f) => {
        const a = acks.find((x) => covers(x, doc, { base: c.base! }, f));
        if (a) used.add(a);
        return !a;
      });
      const older = c.kind === "released" && c.version !== latest;
      const gained = older ? findings.filter((f) => f.level < 3 && !appliesToEveryVersion(f)) : [];
      const warnings = findings.filter((f) => f.level === 2 && !gained.includes(f));
      let summary =
        `${doc} ${c.version} against ${c.kind === "released" ? "its release" : `release ${c.base}`}: ` +
        `${breaking.length} breaking (${breaking.length - open.length} acknowledged), ${warnings.length} to check, ` +
        `${findings.length - breaking.length - warnings.length} other`;
      if (c.kind === "new-major") {
        const moved = movedFindings(c.baseFile, c.file);
        summary +=
          `; a new major version: ${new Set(moved.map(where)).size} operation(s) under /v${major(c.version)} replace released ones,` +
          ` with ${moved.filter((f) => f.level === 3).length} breaking change(s) for a client that moves to them (CHANGELOG.md lists them)`;
      }
      console.log(summary);
      if (older) {
        console.log(
          `  info   ${findings.filter(appliesToEveryVersion).length} change(s) TypeSpec applies to every version (descriptions, examples, error responses) show in ${c.version} too; they ship with ${latest}`,
        );
      }
      for (const f of open) flag("BREAKING", f, c.version);
      for (const f of gained) flag("NOT VERSIONED", f, c.version);
      for (const f of warnings) flag("check", f, c.version);
      if (gained.length > 0) notVersioned = [...notVersioned, c.version];
      if (c.kind === "released" && c.version === latest && findings.length > 0) {
        // The document moved on from its last release: the next release must be declared now, so
        // what the service serves never claims a released number with other content.
        failures.push(
          `${doc}: ${c.version} is released and ${rel(c.file)} differs from it (${findings.length} change(s)): declare the next release` +
            ` as the last \`Versions\` member (${nextMinor(c.version)} for additions and corrections, ${major(c.version) + 1}.0.0 for breaking changes), spec/README.md`,
        );
      }
      if (c.kind === "new-major" && open.length > 0)
        majorBreaks.push({ version: c.version, base: c.base, operations: new Set(open.map(where)) });
      else for (const f of open) unacknowledged.set([f.id, where(f), f.text].join("\0"), c.base);
    }
    for (const label of ORDER) {
      for (const { f, versions } of [...flagged.values()].filter((x) => x.label === label)) {
        console.log(`  ${label}  ${f.id}  ${where(f)}: ${f.text} (in ${listed(versions)})`);
      }
    }
    if (unacknowledged.size > 0) {
      const bases = [...new Set(unacknowledged.values())];
      failures.push(
        `${doc}: ${unacknowledged.size} unacknowledged breaking change(s) against ${listed(bases)}. Either undo them, ship them in a new major version` +
          ` (a \`Versions\` member ${major(latest) + 1}.0.0 that serves what it changes ${WHERE_A_MAJOR_LIVES[doc]}), or acknowledge each in` +
          ` ${ackFile} with {document: ${doc}, id, operation, reason} after review.`,
      );
    }
    for (const b of majorBreaks) {
      failures.push(
        `${doc}: ${b.version} changes ${b.operations.size} operation(s) that release ${b.base} serves (${[...b.operations].join(", ")}).` +
          ` A new major version leaves the released paths as they are and serves what it changes ${WHERE_A_MAJOR_LIVES[doc]}; or acknowledge each in ${ackFile} after review.`,
      );
    }
    if (notVersioned.length > 0) {
      failures.push(
        `${doc}: ${listed(notVersioned)}, regenerated, ${notVersioned.length === 1 ? "differs from its release" : "differ from their releases"}` +
          " by what TypeSpec marks per version (operations, parameters, properties, enum members): mark it @added(Versions.<the version that adds it>)" +
          " (or @removed, @madeOptional, @renamedFrom, @typeChangedFrom for what changed), spec/README.md",
      );
    }
    for (const message of failures) console.error(message);
    if (failures.length > 0) ok = false;
  }
  console.log();
  for (const a of acks.filter((x) => !used.has(x) && !matchesItsRelease(p, x))) {
    ok = false;
    console.error(
      `${ackFile}: acknowledgement {document: ${a.document}, id: ${a.id}, operation: ${a.operation}${a.release ? `, release: ${a.release}` : ""}} matches no breaking change: remove it`,
    );
  }
  if (!existsSync(p.changelogFile) || readFileSync(p.changelogFile, "utf8") !== freshChangelog()) {
    ok = false;
    console.error(`${rel(p.changelogFile)} is not what the documents say now: run npm run changelog and commit it`);
  }
  console.log(ok ? "api:check passed" : "api:check failed: see the lines above");
  return ok;
}

/** A released acknowledgement covers a breaking change of its release against the release before. */
function matchesItsRelease(p: Project, a: Acknowledgement): boolean {
  if (!a.release) return false;
  const released = p.releases(a.document);
  const i = released.indexOf(a.release);
  if (i < 1) return false;
  const before = released[i - 1]!;
  return findingsOf(p.releaseFile(a.document, before), p.releaseFile(a.document, a.release)).some(
    (f) => f.level === 3 && covers(a, a.document, { base: before, release: a.release }, f),
  );
}
