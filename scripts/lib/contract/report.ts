/**
 * Findings as a reviewer reads them, in CHANGELOG.md and in a pull-request comment: by level
 * (breaking, to check, other changes), one line per kind of change. oasdiff reports a change once
 * per operation and response status (the `code` enum of every error response is 249 findings), so
 * findings that differ only in those are one line that counts them; each acknowledged breaking change
 * carries its reason. Written as a small block model, rendered to Markdown or to HTML.
 */
import { statusOf, where, withoutStatus } from "./findings.ts";
import type { Finding } from "./oasdiff.ts";

/** A finding with the reasons of the acknowledgements that cover it. */
export type Reported = Finding & { reasons?: string[] };

type Item = { text: string; notes: string[]; details?: { summary: string; text: string } };
export type Block = { heading: string; level: 1 | 2 | 3 | 4 } | { paragraph: string } | { items: Item[] };

const LEVELS: Array<[Finding["level"], string]> = [
  [3, "Breaking:"],
  [2, "To check (may break some clients):"],
  [1, "Changes:"],
];

/** Operations listed in the line itself up to this many; more go into a collapsed list. */
const INLINE_OPERATIONS = 4;

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;
const byNumber = (a: string, b: string) => a.localeCompare(b, "en", { numeric: true });
const named = (f: Finding) => `\`${where(f)}\`${f.was ? ` (was \`${f.was}\`)` : ""}`;

/** One line for findings of the same check and text that differ only in operation and status. */
function item(group: Reported[]): Item {
  const first = group[0]!;
  const notes = [...new Set(group.flatMap((f) => f.reasons ?? []))].map((r) => `Acknowledged: ${r}`);
  if (group.length === 1) return { text: `${named(first)}: ${first.text} (\`${first.id}\`)`, notes };
  if (!first.path) {
    // Outside paths the findings differ in the name they are about: `removed the schema `A`, `B``.
    const names = group.map((f) => FIRST_NAME.exec(f.text)?.[0] ?? "");
    return { text: `${named(first)}: ${first.text.replace(FIRST_NAME, names.join(", "))} (\`${first.id}\`)`, notes };
  }
  // Enum values added together are one change: their names listed in the one line.
  const values = [...new Set(group.map((f) => FIRST_NAME.exec(f.text)?.[0] ?? ""))];
  const text = ADDED_VALUE.test(first.id) ? withoutStatus(first.text).replace(FIRST_NAME, values.join(", ")) : withoutStatus(first.text);
  const operations = new Map<string, { name: string; statuses: string[] }>();
  for (const f of group) {
    const o = operations.get(where(f)) ?? { name: named(f), statuses: [] };
    const status = statusOf(f);
    if (status && !o.statuses.includes(status)) o.statuses.push(status);
    operations.set(where(f), o);
  }
  const statuses = [...new Set(group.map(statusOf).filter((s): s is string => s !== undefined))].sort(byNumber);
  const list = [...operations.values()].map((o) =>
    o.statuses.length > 0 ? `${o.name} (${o.statuses.sort(byNumber).join(", ")})` : o.name,
  );
  if (operations.size === 1) {
    const only = [...operations.values()][0]!.name;
    return { text: `${only}: ${text}${statuses.length > 0 ? `, status ${statuses.join(", ")}` : ""} (\`${first.id}\`)`, notes };
  }
  const responses = statuses.every((s) => /^[45]|default/i.test(s)) ? "error responses" : "responses";
  const count =
    statuses.length > 0
      ? `${group.length} ${responses} (${statuses.join(", ")}) of ${plural(operations.size, "operation")}`
      : plural(operations.size, "operation");
  if (operations.size <= INLINE_OPERATIONS) return { text: `${text}: ${count}: ${list.join(", ")} (\`${first.id}\`)`, notes };
  return {
    text: `${text}: ${count} (\`${first.id}\`)`,
    notes,
    details: { summary: `The ${plural(operations.size, "operation")}`, text: list.join(", ") },
  };
}

const FIRST_NAME = /`[^`]+`/;
/** Checks whose findings name one added enum value each (oasdiff reports every value apart). */
const ADDED_VALUE = /enum-value-added$/;

/**
 * What findings that are one line share: on operations, the check and the text but for the status
 * (one line per kind of change, counting operations and responses), and but for the value of an
 * added enum value; outside paths (components), the check and the text but for the first name in it.
 */
const groupKey = (f: Finding) =>
  f.path
    ? `${f.id}\0${ADDED_VALUE.test(f.id) ? withoutStatus(f.text).replace(FIRST_NAME, "`…`") : withoutStatus(f.text)}`
    : `${f.id}\0${where(f)}\0${f.text.replace(FIRST_NAME, "`…`")}`;

/**
 * Groups that are the same change to other names (properties added to the same responses, one
 * group each): what they share but the name, and where they happened. Enum values are merged
 * already (groupKey), so they are left alone.
 */
const sameChangeKey = (group: Reported[]) => {
  const first = group[0]!;
  if (ADDED_VALUE.test(first.id) || !first.path) return undefined;
  const places = group.map((f) => `${where(f)} ${statusOf(f) ?? ""}`).sort();
  return `${first.id}\0${withoutStatus(first.text).replace(FIRST_NAME, "`…`")}\0${places.join("\0")}`;
};

/** One line for groups that are the same change to several names: the names listed where the first stood. */
function mergedItem(groups: Reported[][]): Item {
  const line = item(groups[0]!);
  if (groups.length === 1) return line;
  const names = groups.map((g) => FIRST_NAME.exec(g[0]!.text)?.[0] ?? "");
  const notes = [...new Set(groups.flatMap((g) => item(g).notes))];
  return { ...line, text: line.text.replace(names[0]!, names.join(", ")), notes };
}

/** The findings of one comparison, by level, repeats grouped; `empty` when there is none. */
export function findingBlocks(findings: Reported[], empty = "No change to the contract."): Block[] {
  if (findings.length === 0) return [{ paragraph: empty }];
  const blocks: Block[] = [];
  for (const [level, name] of LEVELS) {
    const groups = new Map<string, Reported[]>();
    for (const f of findings.filter((x) => x.level === level)) {
      groups.set(groupKey(f), [...(groups.get(groupKey(f)) ?? []), f]);
    }
    if (groups.size === 0) continue;
    const lines = new Map<string, Reported[][]>();
    for (const [key, group] of groups) {
      const same = sameChangeKey(group) ?? key;
      lines.set(same, [...(lines.get(same) ?? []), group]);
    }
    blocks.push({ paragraph: name }, { items: [...lines.values()].map(mergedItem) });
  }
  return blocks;
}

export function toMarkdown(blocks: Block[]): string {
  const out: string[] = [];
  for (const b of blocks) {
    if ("heading" in b) out.push(`${"#".repeat(b.level)} ${b.heading}`);
    else if ("paragraph" in b) out.push(b.paragraph);
    else
      out.push(
        b.items
          .map((i) => {
            let s = `- ${i.text}`;
            for (const note of i.notes) s += `\n  - ${note}`;
            // GitHub renders <details> collapsed; the list inside stays Markdown (blank lines around it).
            if (i.details) s += `\n\n  <details><summary>${i.details.summary}</summary>\n\n  ${i.details.text}\n\n  </details>\n`;
            return s;
          })
          .join("\n"),
      );
  }
  return `${out.join("\n\n").replace(/\n{3,}/g, "\n\n")}\n`;
}

const escapeHtml = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
/** Escaped text with its `code spans` as <code>. */
const inline = (s: string) => escapeHtml(s).replace(/`([^`]+)`/g, "<code>$1</code>");

export function toHtml(blocks: Block[]): string {
  const out: string[] = [];
  for (const b of blocks) {
    if ("heading" in b) out.push(`<h${b.level}>${inline(b.heading)}</h${b.level}>`);
    else if ("paragraph" in b) out.push(`<p>${inline(b.paragraph)}</p>`);
    else {
      out.push("<ul>");
      for (const i of b.items) {
        let li = `<li>${inline(i.text)}`;
        if (i.notes.length > 0) li += `<ul>${i.notes.map((n) => `<li>${inline(n)}</li>`).join("")}</ul>`;
        if (i.details) li += `<details><summary>${inline(i.details.summary)}</summary><p>${inline(i.details.text)}</p></details>`;
        out.push(`${li}</li>`);
      }
      out.push("</ul>");
    }
  }
  return `${out.join("\n")}\n`;
}
