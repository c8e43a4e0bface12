/**
 * The contract documents and every response they declare, read from whatever generated/openapi/*.yaml
 * exist (never a hard-coded list of operations, so a document added or split later is counted as it
 * is). Shared by the recorder of the conformance workers (conformance/harness/contract-recorder.ts),
 * the coverage report (scripts/contract-coverage.ts), the mocks (scripts/prism.ts,
 * scripts/mock-violations.ts) and their tests.
 *
 * Which side a document describes follows its file name:
 * - `<service>.yaml` and `<service>-<part>.yaml`: what the service answers (its origin is the
 *   service's URL; a request is matched against each of its documents in turn);
 * - `<anything>-webhooks.yaml`: what a receiver of our webhooks must accept; our services SEND
 *   these requests, and the receiver's answer is the response.
 */
import { readdirSync, readFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parse } from "yaml";

const root = join(dirname(fileURLToPath(import.meta.url)), "../..");
export const DOCUMENTS_DIR = join(root, "generated/openapi");

const METHODS = ["get", "put", "post", "delete", "patch", "head", "options", "trace"] as const;

export interface ContractDocument {
  /** File name without `.yaml`: `identity`, `identity-webhooks`. */
  name: string;
  file: string;
  /** True for the receiver contracts (`*-webhooks`): requests our services send. */
  receiver: boolean;
  /** The parsed (not dereferenced) document. */
  definition: any;
}

/** One declared response: a status of an operation, in one content type ("" for a response without a body). */
export interface DeclaredResponse {
  document: string;
  operationId: string;
  method: string;
  path: string;
  status: string;
  contentType: string;
  /** Names of the documented examples of this status and content type. */
  examples: string[];
}

export function contractDocuments(dir = DOCUMENTS_DIR): ContractDocument[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith(".yaml"))
    .sort()
    .map((f) => {
      const name = basename(f, ".yaml");
      return { name, file: join(dir, f), receiver: name.endsWith("-webhooks"), definition: parse(readFileSync(join(dir, f), "utf8")) };
    });
}

/** The documents a service answers with: `<service>.yaml` and `<service>-<part>.yaml`, receivers excepted. */
export const documentsOfService = (docs: ContractDocument[], service: string): ContractDocument[] =>
  docs.filter((d) => !d.receiver && (d.name === service || d.name.startsWith(`${service}-`)));

/** Follows a local `$ref` (`#/components/responses/X`); the generated documents have no remote ones. */
export function resolveRef(doc: any, node: any): any {
  for (let depth = 0; node && typeof node.$ref === "string" && depth < 20; depth++) {
    node = node.$ref
      .slice(2)
      .split("/")
      .reduce((o: any, k: string) => o?.[k.replace(/~1/g, "/").replace(/~0/g, "~")], doc);
  }
  return node;
}

export function declaredResponses(docs: ContractDocument[]): DeclaredResponse[] {
  const out: DeclaredResponse[] = [];
  for (const doc of docs) {
    for (const [path, item] of Object.entries<any>(doc.definition.paths ?? {})) {
      for (const method of METHODS) {
        const op = item?.[method];
        if (!op?.operationId) continue;
        for (const [status, raw] of Object.entries<any>(op.responses ?? {})) {
          const response = resolveRef(doc.definition, raw);
          const content = Object.entries<any>(response?.content ?? {});
          if (!content.length)
            out.push({ document: doc.name, operationId: op.operationId, method, path, status, contentType: "", examples: [] });
          for (const [contentType, media] of content) {
            out.push({
              document: doc.name,
              operationId: op.operationId,
              method,
              path,
              status,
              contentType,
              examples: Object.keys(media?.examples ?? {}),
            });
          }
        }
      }
    }
  }
  return out;
}

/** The key of a response everywhere (report, allow-list, observations): document, operationId, status, content type. */
export const responseKey = (r: { document: string; operationId: string; status: string; contentType: string }): string =>
  `${r.document} ${r.operationId} ${r.status} ${r.contentType || "(no body)"}`;

/** The declared status an answered status falls under: exact, then `4XX`-style range, then `default`. */
export function declaredStatus(declared: string[], status: number): string | undefined {
  const exact = String(status);
  if (declared.includes(exact)) return exact;
  const range = `${exact[0]}XX`;
  return declared.find((s) => s.toUpperCase() === range) ?? (declared.includes("default") ? "default" : undefined);
}

/** `application/json; charset=utf-8` → `application/json`. */
export const mediaType = (contentType: string | null | undefined): string => (contentType ?? "").split(";")[0]!.trim().toLowerCase();
