/**
 * Every relative link in the project's Markdown documents (the README, ARCHITECTURE.md, docs/,
 * bench/ and its results, spec/README.md, …) reaches a file or folder that exists, and a link to
 * a heading (`file.md#anchor`, or `#anchor` within the file) names a heading of that file, by the
 * anchors GitHub makes. Links to other sites are not fetched.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { describe, expect, it } from "vitest";

const root = join(import.meta.dirname, "../..");

/** Folders that hold no documents of ours: dependencies, build output, tools, local data. */
const SKIPPED = new Set(["node_modules", "generated", "data", "coverage", "dist"]);

function markdownFiles(dir: string): string[] {
  const found: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name.startsWith(".") || SKIPPED.has(entry.name)) continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) found.push(...markdownFiles(path));
    else if (entry.name.endsWith(".md")) found.push(path);
  }
  return found;
}

/** The text outside fenced code blocks and inline code spans, where links are links. */
function prose(markdown: string): string[] {
  const lines: string[] = [];
  let fenced = false;
  for (const line of markdown.split("\n")) {
    if (/^\s*(```|~~~)/.test(line)) {
      fenced = !fenced;
      continue;
    }
    if (!fenced) lines.push(line.replace(/`[^`]*`/g, "``"));
  }
  return lines;
}

/** The anchors GitHub gives a document's headings: lower case, punctuation dropped, spaces as hyphens, repeats numbered. */
function headingAnchors(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  let fenced = false;
  for (const line of markdown.split("\n")) {
    if (/^\s*(```|~~~)/.test(line)) fenced = !fenced;
    const heading = fenced ? null : /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!heading) continue;
    const text = (heading[1] ?? "").replace(/\[([^\]]*)\]\([^)]*\)/g, "$1");
    const slug = text
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, "")
      .replace(/\s/g, "-");
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    anchors.add(n === 0 ? slug : `${slug}-${n}`);
  }
  return anchors;
}

interface Link {
  file: string;
  target: string;
}

function relativeLinks(file: string): Link[] {
  const links: Link[] = [];
  for (const line of prose(readFileSync(file, "utf8"))) {
    for (const match of line.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
      const target = match[1] ?? "";
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:, …
      links.push({ file, target });
    }
  }
  return links;
}

/** Why a link does not lead anywhere, or undefined when it does. */
function broken({ file, target }: Link): string | undefined {
  const [pathPart = "", anchor] = target.split("#", 2);
  const path = pathPart === "" ? file : join(dirname(file), decodeURIComponent(pathPart));
  const fromRoot = relative(root, path);
  if (!existsSync(path)) return `${fromRoot} does not exist`;
  if (anchor === undefined || anchor === "") return undefined;
  if (statSync(path).isDirectory() || !path.endsWith(".md")) return `#${anchor} points into ${fromRoot}, which has no headings`;
  return headingAnchors(readFileSync(path, "utf8")).has(anchor) ? undefined : `${fromRoot} has no heading #${anchor}`;
}

describe("documentation links", () => {
  const files = markdownFiles(root);

  it("GitHub's anchors: lower case, punctuation and code marks dropped, spaces as hyphens, repeats numbered", () => {
    expect([...headingAnchors("# What `npm test` runs\n## Node.js and Go\n## Against a deployment (QA)\n## Notes\n## Notes\n")]).toEqual([
      "what-npm-test-runs",
      "nodejs-and-go",
      "against-a-deployment-qa",
      "notes",
      "notes-1",
    ]);
  });

  it("the documents are found: the README, the guides, the benchmarks' page and its results", () => {
    const names = files.map((f) => relative(root, f));
    for (const expected of ["README.md", "ARCHITECTURE.md", "docs/operations.md", "docs/contributing.md", "bench/README.md"]) {
      expect(names).toContain(expected);
    }
    expect(names.filter((n) => n.startsWith("bench/results/")).length).toBeGreaterThan(0);
  });

  it("every relative link reaches an existing file, and every anchor a heading of it", () => {
    const problems = files
      .flatMap(relativeLinks)
      .map((link) => ({ link, why: broken(link) }))
      .filter((p) => p.why !== undefined)
      .map(({ link, why }) => `${relative(root, link.file)}: (${link.target}) ${why}`);
    expect(problems).toEqual([]);
  });
});
