/**
 * What the contract's changes mean for clients, for people: CHANGELOG.md (`npm run changelog`; per
 * document, what is not released yet, then each release, dated, against the one before) and the
 * same for a pull request (`npm run api:diff -- --format markdown|html [--base <git ref>]`). Each
 * lists the findings by level with repeats grouped (report.ts), the reason of every acknowledged
 * breaking change, and, for a new major version, what changes for a client that moves to its
 * operations (major.ts).
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { covers, type Span } from "./acknowledgements.ts";
import { comparisons, findingsOf } from "./comparisons.ts";
import { movedFindings } from "./major.ts";
import type { Finding } from "./oasdiff.ts";
import { DOCUMENTS, major, type Project, titleOf, versionOf } from "./project.ts";
import { type Block, findingBlocks, type Reported, toHtml, toMarkdown } from "./report.ts";

/** The findings of `base` → `revision` with the reasons of the acknowledgements that cover them. */
function reported(p: Project, doc: string, span: Span, findings: Finding[]): Reported[] {
  const acks = p.acknowledgements();
  return findings.map((f) => {
    const reasons = f.level === 3 ? acks.filter((a) => covers(a, doc, span, f)).map((a) => a.reason) : [];
    return reasons.length > 0 ? { ...f, reasons } : f;
  });
}

/** The blocks of one comparison: its findings, and for a new major what its moved operations change. */
function comparisonBlocks(p: Project, doc: string, span: Span, baseFile: string, revisionFile: string, newMajor: boolean): Block[] {
  const blocks = findingBlocks(reported(p, doc, span, findingsOf(baseFile, revisionFile)));
  if (!newMajor) return blocks;
  const moved = movedFindings(baseFile, revisionFile);
  const prefix = `/v${major(versionOf(revisionFile))}`;
  return [
    ...blocks,
    { heading: `For a client that moves to \`${prefix}\``, level: 4 },
    {
      paragraph:
        "What each operation of the new major version changes against the released operation it replaces (the released paths stay as they are).",
    },
    ...findingBlocks(reported(p, doc, span, moved), `No operation under \`${prefix}\` replaces a released one.`),
  ];
}

export function changelog(p: Project): string {
  const blocks: Block[] = [
    { heading: "Changelog of the API contracts", level: 1 },
    {
      paragraph:
        "Written by `npm run changelog` (scripts/api-diff.ts) from oasdiff's comparison of the generated documents with the released snapshots in " +
        '`spec/releases/`; do not edit by hand. The versioning policy is in spec/README.md ("Versions and breaking changes"); `npm test` fails ' +
        "when this file is out of date. A change oasdiff reports on many operations or responses is one line that counts them; a breaking change " +
        "shipped within a major version says why (`spec/releases/acknowledged-breaking.yaml`). For a pull request: " +
        "`npm run api:diff -- --format markdown` (or `html`, `--base <git ref>`).",
    },
  ];
  for (const doc of DOCUMENTS) {
    blocks.push({ heading: `${titleOf(p.latestFile(doc))} (\`${doc}\`)`, level: 2 });
    const released = p.releases(doc);
    const latest = versionOf(p.latestFile(doc));
    for (const c of comparisons(p, doc).reverse()) {
      if (!c.baseFile || !c.base) continue;
      if (c.kind === "released" && c.version !== latest) continue; // its changes are in the next version's section
      const span = { base: c.base };
      if (c.kind === "released") {
        // Changes made to the released latest version (the gate fails on them): shown until the version moves.
        const findings = findingsOf(c.baseFile, c.file);
        if (findings.length === 0) continue;
        blocks.push(
          { heading: `Not released yet: changes to ${c.version} (give them a new version before the release)`, level: 3 },
          ...findingBlocks(reported(p, doc, span, findings)),
        );
        continue;
      }
      blocks.push(
        { heading: `${c.version}, not released yet (against ${c.base}${c.kind === "new-major" ? ", a new major version" : ""})`, level: 3 },
        ...comparisonBlocks(p, doc, span, c.baseFile, c.file, c.kind === "new-major"),
      );
    }
    for (let i = released.length - 1; i >= 0; i--) {
      const v = released[i]!;
      const date = p.releaseDate(doc, v);
      blocks.push({ heading: `${v}${date ? ` (released ${date})` : ""}`, level: 3 });
      if (i === 0) {
        blocks.push({ paragraph: `The first released version (\`spec/releases/${doc}/${v}.yaml\`).` });
        continue;
      }
      const before = released[i - 1]!;
      blocks.push(
        ...comparisonBlocks(
          p,
          doc,
          { base: before, release: v },
          p.releaseFile(doc, before),
          p.releaseFile(doc, v),
          major(v) > major(before),
        ),
      );
    }
  }
  return `${toMarkdown(blocks).trimEnd()}\n`;
}

/**
 * The changes for a pull-request comment: each document's latest version against its last release
 * (what the next release carries), or against the same document at a git ref (`--base main`: what
 * this branch changes). Documents without a change are named in one line at the end.
 */
export function prDiff(p: Project, options: { base?: string; format: "markdown" | "html"; documents: string[] }): string {
  const blocks: Block[] = [{ heading: "API contract changes", level: 2 }];
  blocks.push({
    paragraph:
      (options.base
        ? `What oasdiff finds between each generated document at \`${options.base}\` and now`
        : "What each generated document carries that its last release (`spec/releases/`) does not") +
      '; the policy on breaking changes is in spec/README.md ("Versions and breaking changes"). Written by `npm run api:diff`.',
  });
  const unchanged: string[] = [];
  const dir = mkdtempSync(join(tmpdir(), "api-diff-base-"));
  try {
    for (const doc of DOCUMENTS.filter((d) => options.documents.length === 0 || options.documents.includes(d))) {
      const file = p.latestFile(doc);
      const version = versionOf(file);
      let baseFile: string;
      let span: Span;
      let against: string;
      if (options.base) {
        const text = gitShow(p.root, options.base, `generated/openapi/${doc}.yaml`);
        if (text === undefined) {
          blocks.push(
            { heading: `${titleOf(file)} (\`${doc}\`) ${version}`, level: 3 },
            { paragraph: `A new document: not in \`${options.base}\`.` },
          );
          continue;
        }
        baseFile = join(dir, `${doc}.yaml`);
        writeFileSync(baseFile, text);
        span = { base: versionOf(baseFile) };
        against = options.base;
      } else {
        const last = p.releases(doc).at(-1);
        if (!last) continue;
        baseFile = p.releaseFile(doc, last);
        span = { base: last };
        against = `release ${last}`;
      }
      const newMajor = major(version) > major(versionOf(baseFile));
      const blocksOf = comparisonBlocks(p, doc, span, baseFile, file, newMajor);
      if (blocksOf.length === 1 && "paragraph" in blocksOf[0]!) {
        unchanged.push(`\`${doc}\``);
        continue;
      }
      blocks.push({ heading: `${titleOf(file)} (\`${doc}\`) ${version} against ${against}`, level: 3 }, ...blocksOf);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  if (unchanged.length > 0) blocks.push({ paragraph: `No change: ${unchanged.join(", ")}.` });
  return options.format === "html" ? toHtml(blocks) : toMarkdown(blocks);
}

/** A file as it is at a git ref of the repository that holds `root`; undefined if it is not there. */
function gitShow(root: string, ref: string, path: string): string | undefined {
  try {
    return execFileSync("git", ["-C", root, "show", `${ref}:./${path}`], {
      encoding: "utf8",
      maxBuffer: 64 * 1024 * 1024,
      stdio: ["ignore", "pipe", "pipe"],
    });
  } catch (err) {
    const stderr = String((err as { stderr?: string }).stderr ?? "");
    if (/does not exist|exists on disk, but not in/.test(stderr)) return undefined;
    throw new Error(`git show ${ref}:${path} failed: ${stderr.trim()}`);
  }
}
