/**
 * A new major version, as spec/README.md has it: the released paths stay as they are, and what the
 * major changes is served under its prefix beside them (repository `/v2/repository` beside
 * `/repository`, email `/v2/emails` beside `/v1/emails`, identity `/api/v2/…` beside `/api/…`).
 * oasdiff sees only a new operation there; this module says what changes for a client that moves
 * from the released operation to the one that replaces it.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stringify } from "yaml";
import { reclassify } from "./findings.ts";
import { diff, type Finding } from "./oasdiff.ts";
import { major, readDocument } from "./project.ts";

const METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];

/** The released path a new path of major `n` replaces: `/v2/x` → `/v1/x` or `/x`, `/api/v2/x` → `/api/x`. */
function replaced(path: string, n: number, released: Record<string, unknown>): string | undefined {
  const segment = new RegExp(`/v${n}(?=/|$)`);
  if (!segment.test(path) || path in released) return undefined;
  return [path.replace(segment, `/v${n - 1}`), path.replace(segment, "") || "/"].find((p) => p in released);
}

/** The operations of `revision` that replace one of `base`: `{ method, from: released path, to: new path }`. */
export function movedOperations(base: any, revision: any): Array<{ method: string; from: string; to: string }> {
  const n = major(String(revision.info.version));
  const out: Array<{ method: string; from: string; to: string }> = [];
  for (const [path, item] of Object.entries<Record<string, unknown>>(revision.paths ?? {})) {
    const from = replaced(path, n, base.paths ?? {});
    if (!from) continue;
    for (const method of METHODS) if (item[method] && base.paths[from][method]) out.push({ method, from, to: path });
  }
  return out;
}

/**
 * What changes for a client of release `baseFile` that moves to the new major's operations: oasdiff
 * on a copy of the revision where each moving operation stands at its released path (with its
 * released operationId), kept to those operations and named by their new paths (`was`: the old).
 */
export function movedFindings(baseFile: string, revisionFile: string): Finding[] {
  const base = readDocument(baseFile);
  const revision = readDocument(revisionFile);
  const moved = movedOperations(base, revision);
  if (moved.length === 0) return [];
  const view = structuredClone(revision);
  for (const { method, from, to } of moved) {
    view.paths[from] = { ...view.paths[from], [method]: { ...view.paths[to][method], operationId: base.paths[from][method].operationId } };
    delete view.paths[to][method];
    if (!METHODS.some((m) => view.paths[to][m])) delete view.paths[to];
  }
  const dir = mkdtempSync(join(tmpdir(), "api-major-"));
  try {
    const file = join(dir, "moved.yaml");
    writeFileSync(file, stringify(view, { lineWidth: 0 }));
    return reclassify(diff(baseFile, file), base, view).flatMap((f) => {
      const m = moved.find((x) => x.from === f.path && x.method.toUpperCase() === f.operation);
      return m ? [{ ...f, path: m.to, was: `${f.operation} ${m.from}` }] : [];
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
