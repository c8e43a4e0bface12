/**
 * Where the contract's files are, for the project or for a scratch copy of it (tests): the generated
 * documents (the latest version of each, and the older versions the spec still declares), the
 * released snapshots, their release dates, the acknowledged breaking changes and the changelog.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { parse } from "yaml";
import { z } from "zod";

/** The documents, in the order the changelog lists them (generated/openapi/<name>.yaml). */
export const DOCUMENTS = ["identity", "identity-webhooks", "repository", "email", "email-webhooks"] as const;
export type DocumentName = (typeof DOCUMENTS)[number];

const semver = z.string().regex(/^\d+\.\d+\.\d+$/, "a version such as 1.1.0");

export const Acknowledgement = z
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
    /** The release the change shipped in: written by `npm run release`, absent while it is not released. */
    release: z.preprocess((v) => (v === undefined ? v : String(v)), semver).optional(),
  })
  .strict();
export type Acknowledgement = z.infer<typeof Acknowledgement>;

const ReleaseDate = z
  .object({
    document: z.enum(DOCUMENTS),
    version: z.preprocess(String, semver),
    date: z.preprocess(String, z.string().regex(/^\d{4}-\d{2}-\d{2}$/, "a date such as 2026-11-23")),
  })
  .strict();

export const compareVersions = (a: string, b: string): number => {
  const pa = a.split(".").map(Number);
  const pb = b.split(".").map(Number);
  for (let i = 0; i < 3; i++) if ((pa[i] ?? 0) !== (pb[i] ?? 0)) return (pa[i] ?? 0) - (pb[i] ?? 0);
  return 0;
};
export const major = (v: string) => Number(v.split(".")[0]);
export const nextMinor = (v: string) => `${major(v)}.${Number(v.split(".")[1]) + 1}.0`;

const documents = new Map<string, any>();
/** A document's parsed content (files do not change during one run). */
export function readDocument(file: string): any {
  if (!documents.has(file)) documents.set(file, parse(readFileSync(file, "utf8")));
  return documents.get(file);
}
export const versionOf = (file: string): string => String(readDocument(file).info.version);
export const titleOf = (file: string): string => String(readDocument(file).info.title);

export class Project {
  readonly root: string;

  constructor(root: string) {
    this.root = root;
  }
  get releasesDir() {
    return join(this.root, "spec/releases");
  }
  get acknowledgementsFile() {
    return join(this.releasesDir, "acknowledged-breaking.yaml");
  }
  /** One line per release: `- { document, version, date }` (release.ts appends). */
  get datesFile() {
    return join(this.releasesDir, "dates.yaml");
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
  /** The day a version was released, if recorded. */
  releaseDate(doc: string, version: string): string | undefined {
    if (!existsSync(this.datesFile)) return undefined;
    const dates = z.array(ReleaseDate).parse(parse(readFileSync(this.datesFile, "utf8")) ?? []);
    return dates.find((d) => d.document === doc && d.version === version)?.date;
  }
}
