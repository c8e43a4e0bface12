/**
 * `npm test`'s last words: every failed test of the run by file and title, with its failure's first
 * line, read from the summaries the vitest steps wrote. CI keeps only the end of a long log, so the
 * names of what broke are printed there, not only where each step printed them.
 *
 *   node --import tsx scripts/failed-tests.ts <summary.json>...
 *
 * Reads each file that exists (a step that did not run wrote none) and prints nothing when no test failed.
 */
import { existsSync, readFileSync } from "node:fs";

interface Summary {
  tests?: Array<{ run?: string; file: string; title: string; status: string; failure?: string; reason?: string }>;
}

const lines: string[] = [];
for (const file of process.argv.slice(2)) {
  if (!existsSync(file)) continue;
  const summary = JSON.parse(readFileSync(file, "utf8")) as Summary;
  for (const t of summary.tests ?? [])
    if (t.status === "failed" || t.status === "not run")
      lines.push(`  ${t.run ? `${t.run}  ` : ""}${t.file}  ${t.title}: ${t.failure ?? t.reason ?? t.status}`);
}
if (lines.length) console.log(`failed tests:\n${lines.join("\n")}`);
