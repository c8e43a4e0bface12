/**
 * Which document is compared with which release. For each version the spec declares: a released
 * version with its own snapshot; an unreleased one with the last release before it, of the same
 * major (must not break) or of the one before (a new major).
 */
import { reclassify } from "./findings.ts";
import { diff, type Finding } from "./oasdiff.ts";
import { compareVersions, major, type Project, readDocument } from "./project.ts";

export type Comparison = {
  doc: string;
  version: string;
  file: string;
  base?: string;
  baseFile?: string;
  /** released: regenerated release; same-major: unreleased, must not break; new-major: unreleased, first of its major. */
  kind: "released" | "same-major" | "new-major" | "first";
};

export function comparisons(p: Project, doc: string): Comparison[] {
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

/** oasdiff's findings from one document to another, read as the project reads them (findings.ts). */
export function findingsOf(baseFile: string, revisionFile: string): Finding[] {
  return reclassify(diff(baseFile, revisionFile), readDocument(baseFile), readDocument(revisionFile));
}
