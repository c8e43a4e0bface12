/**
 * `npm run release -- <document>`: records the generated latest version of a document as released.
 * It writes the snapshot (a copy of the generated document, never changed afterwards), appends the
 * day to spec/releases/dates.yaml, marks the document's acknowledgements with the release
 * (acknowledgements.ts: one line each, the rest of the file byte for byte) and rewrites CHANGELOG.md.
 */
import { appendFileSync, copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, relative } from "node:path";
import { markReleased } from "./acknowledgements.ts";
import { changelog } from "./changelog.ts";
import { DOCUMENTS, type Project, versionOf } from "./project.ts";

export function release(p: Project, doc: string, date: string): void {
  if (!(DOCUMENTS as readonly string[]).includes(doc)) throw new Error(`unknown document ${doc}; one of ${DOCUMENTS.join(", ")}`);
  if (!/^\d{4}-\d{2}-\d{2}$/.test(date)) throw new Error(`--date ${date}: a day such as 2026-11-23`);
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
  const dates = existsSync(p.datesFile) ? readFileSync(p.datesFile, "utf8") : "";
  appendFileSync(
    p.datesFile,
    `${dates === "" || dates.endsWith("\n") ? "" : "\n"}- { document: ${doc}, version: ${version}, date: ${date} }\n`,
  );
  if (existsSync(p.acknowledgementsFile)) {
    const before = readFileSync(p.acknowledgementsFile, "utf8");
    const after = markReleased(before, doc, version);
    if (after !== before) writeFileSync(p.acknowledgementsFile, after);
  }
  writeFileSync(p.changelogFile, changelog(p));
  console.log(
    `released ${doc} ${version} on ${date}: ${relative(p.root, target)}; ${relative(p.root, p.datesFile)} and CHANGELOG.md updated`,
  );
}
