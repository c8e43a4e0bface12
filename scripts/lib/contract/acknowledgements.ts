/**
 * spec/releases/acknowledged-breaking.yaml: breaking changes shipped within a major version, each
 * reviewed with its reason. An entry stays in the file for good: `npm run release` marks it with the
 * release it shipped in (`release: 1.1.0`), so the changelog keeps showing its reason under that
 * release, and the regenerated older versions, which TypeSpec gives the same change, stay covered.
 */
import { isMap, isScalar, isSeq, parseDocument } from "yaml";
import { where } from "./findings.ts";
import type { Finding } from "./oasdiff.ts";
import { type Acknowledgement, compareVersions } from "./project.ts";

/**
 * What a comparison is, for the entries that may cover its findings: `base` is the release it
 * compares with; `release` is set when it is one release against the one before (the changelog).
 */
export type Span = { base: string; release?: string };

/**
 * Whether an entry covers a finding of a comparison of its document. An entry not released yet
 * covers the gate's comparisons (what changed since the last release). A released one covers the
 * comparison of its release with the one before, and a regenerated older version against its own
 * snapshot (base older than its release); never a change made after its release.
 */
export function covers(a: Acknowledgement, doc: string, span: Span, f: Finding): boolean {
  if (a.document !== doc || a.id !== f.id || a.operation !== where(f) || (a.text !== undefined && !f.text.includes(a.text))) return false;
  if (span.release !== undefined) return a.release === span.release;
  return a.release === undefined || compareVersions(span.base, a.release) < 0;
}

/**
 * Marks the document's entries that are not released yet with `release: <version>`, editing the
 * text: one line inserted after each entry's `document:` line, every other byte as it was (the
 * file is reviewed like code; a reformatting would be noise in review).
 */
export function markReleased(source: string, doc: string, version: string): string {
  const parsed = parseDocument(source);
  const list = parsed.get("acknowledged", true);
  if (!isSeq(list)) return source;
  const inserts: Array<{ at: number; text: string }> = [];
  for (const item of list.items) {
    if (!isMap(item) || item.get("document") !== doc || item.has("release")) continue;
    if (item.flow) {
      // `- { document: x, … }`: the mark goes before the closing brace.
      const close = source.lastIndexOf("}", item.range![1]);
      inserts.push({ at: close, text: `, release: ${version} ` });
      continue;
    }
    const pair = item.items.find((p) => isScalar(p.key) && p.key.value === "document")!;
    const keyStart = (pair.key as { range: [number, number, number] }).range[0];
    const valueEnd = (pair.value as { range: [number, number, number] }).range[1];
    const indent = keyStart - (source.lastIndexOf("\n", keyStart) + 1);
    const lineEnd = source.indexOf("\n", valueEnd);
    const line = `${" ".repeat(indent)}release: ${version}\n`;
    inserts.push(lineEnd === -1 ? { at: source.length, text: `\n${line}` } : { at: lineEnd + 1, text: line });
  }
  let out = source;
  for (const { at, text } of inserts.sort((a, b) => b.at - a.at)) out = out.slice(0, at) + text + out.slice(at);
  return out;
}
