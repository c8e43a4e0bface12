/** Human-readable output: aligned tables and key/value blocks. `--json` bypasses all of this. */

export function table(headers: string[], rows: string[][]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
      .join("  ")
      .trimEnd();
  return [line(headers), ...rows.map(line)].join("\n");
}

export function fields(pairs: [string, string | undefined][]): string {
  const present = pairs.filter((p): p is [string, string] => p[1] !== undefined && p[1] !== "");
  const width = Math.max(...present.map(([k]) => k.length));
  return present.map(([k, v]) => `${`${k}:`.padEnd(width + 1)} ${v}`).join("\n");
}

export const json = (value: unknown) => JSON.stringify(value, null, 2);

/** A footer for paged lists, so users know there is more than one page. */
export function pageNote(page: { page: number; pageSize: number; totalCount: number }, shown: number): string | undefined {
  if (page.totalCount <= (page.page - 1) * page.pageSize + shown) return undefined;
  return `Showing ${shown} of ${page.totalCount}; use --page ${page.page + 1} for more.`;
}
