/**
 * The Prism mocks front-end developers build against: every documented operation of every
 * generated document answers with its documented example, for every status that has one, and
 * requests that break the contract are refused.
 */
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { freePort } from "../../support/free-port.ts";
import RandExp from "randexp";
import { startMock, type RunningMock } from "../../scripts/prism.ts";
import { contractDocuments, declaredResponses, mediaType } from "../../support/contract/documents.ts";
import { MOCK_RECORD_FILE, mockCoverage, type MockRecord } from "../../scripts/contract-coverage.ts";

/** Every (response, content type, example) obtained from a mock, for the contract coverage report. */
const obtained: MockRecord["obtained"] = [];

interface Operation {
  operationId: string;
  method: string;
  path: string;
  parameters?: Array<{ name: string; in: string; required?: boolean; example?: unknown; schema?: ParamSchema }>;
  requestBody?: { content: Record<string, { examples?: Record<string, { value: unknown }> }> };
  responses: Record<
    string,
    {
      content?: Record<string, { examples?: Record<string, { value: unknown }> }>;
      headers?: Record<string, { example?: unknown; schema?: { enum?: unknown[] } }>;
    }
  >;
  security?: Array<Record<string, string[]>>;
}

/** Resolves local `$ref`s (the generated documents have no remote ones). */
function deref(doc: any, node: any, depth = 0): any {
  if (depth > 20 || !node || typeof node !== "object") return node;
  if (Array.isArray(node)) return node.map((n) => deref(doc, n, depth + 1));
  if (typeof node.$ref === "string") {
    const target = node.$ref
      .slice(2)
      .split("/")
      .reduce((o: any, k: string) => o?.[k.replace(/~1/g, "/").replace(/~0/g, "~")], doc);
    return deref(doc, target, depth + 1);
  }
  return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, deref(doc, v, depth + 1)]));
}

const docs = readdirSync("generated/openapi")
  .filter((f) => f.endsWith(".yaml"))
  .map((f) => {
    const doc = parse(readFileSync(join("generated/openapi", f), "utf8"));
    const ops: Operation[] = [];
    for (const [path, item] of Object.entries<Record<string, any>>(doc.paths ?? {})) {
      for (const method of ["get", "put", "post", "delete", "patch"]) {
        if (item[method]) {
          const op = deref(doc, item[method]);
          ops.push({ ...op, method, path, parameters: deref(doc, [...(item.parameters ?? []), ...(op.parameters ?? [])]) });
        }
      }
    }
    return {
      file: f,
      doc,
      ops,
      schemes: (doc.components?.securitySchemes ?? {}) as Record<string, { type: string; scheme?: string; in?: string; name?: string }>,
    };
  });

type ParamSchema = { type?: string; format?: string; enum?: unknown[]; default?: unknown; example?: unknown; pattern?: string };

/** A value the parameter's schema accepts: its example, else one made from its format or pattern. */
const sampleValue = (schema: ParamSchema = {}, example?: unknown): string => {
  if (example !== undefined) return String(example);
  if (schema.example !== undefined) return String(schema.example);
  if (schema.enum?.length) return String(schema.enum[0]);
  if (schema.default !== undefined) return String(schema.default);
  if (schema.format === "uuid") return "3fa85f64-5717-4562-b3fc-2c963f66afa6";
  if (schema.format === "email") return "ada@example.com";
  if (schema.format === "uri" || schema.format === "url") return "https://app.example.com/callback";
  if (schema.type === "integer" || schema.type === "number") return "1";
  if (schema.type === "boolean") return "true";
  if (schema.pattern) {
    const gen = new RandExp(schema.pattern);
    gen.randInt = (min: number) => min; // deterministic: the shortest match
    gen.defaultRange.subtract(0, 47).subtract(58, 64).subtract(91, 96).subtract(123, 0xffff); // letters and digits where a class allows them
    return gen.gen();
  }
  return "example";
};

/** A request that satisfies the operation's contract, built from its documented examples. */
type Schemes = Record<string, { type: string; scheme?: string; in?: string; name?: string }>;

function requestFor(op: Operation, schemes: Schemes, headers: Record<string, string> = {}): { url: string; init: RequestInit } {
  let path = op.path;
  const query = new URLSearchParams();
  const h: Record<string, string> = { ...headers };
  for (const p of op.parameters ?? []) {
    if (p.in === "path") path = path.replace(`{${p.name}}`, encodeURIComponent(sampleValue(p.schema, p.example)));
    else if (p.in === "query" && p.required) query.set(p.name, sampleValue(p.schema, p.example));
    else if (p.in === "header" && p.required && p.name.toLowerCase() !== "content-type") h[p.name] = sampleValue(p.schema, p.example);
  }
  for (const name of Object.keys(op.security?.[0] ?? {})) {
    const scheme = schemes[name];
    if (scheme?.type === "http" && scheme.scheme?.toLowerCase() === "basic")
      h.authorization ??= `Basic ${Buffer.from("client:secret").toString("base64")}`;
    else if (scheme?.type === "http" || scheme?.type === "oauth2")
      h.authorization ??= "Bearer mock-token"; // an OAuth 2.0 scheme's token is a Bearer token too
    else if (scheme?.type === "apiKey" && scheme.in === "cookie") h.cookie = `${scheme.name}=mock-session`;
    else if (scheme?.type === "apiKey" && scheme.in === "header") h[scheme.name!] = "mock-key";
  }
  let body: string | undefined;
  const [type, media] = Object.entries(op.requestBody?.content ?? {})[0] ?? [];
  if (type && media) {
    const example = Object.values(media.examples ?? {})[0]?.value;
    h["content-type"] = type;
    body =
      type === "application/x-www-form-urlencoded"
        ? new URLSearchParams(example as Record<string, string>).toString()
        : JSON.stringify(example ?? {});
  }
  const qs = query.toString();
  return { url: `${path}${qs ? `?${qs}` : ""}`, init: { method: op.method.toUpperCase(), headers: h, body, redirect: "manual" } };
}

for (const { file, ops, schemes } of docs) {
  describe(`mock of ${file}`, () => {
    let mock: RunningMock;
    beforeAll(async () => {
      mock = await startMock(join("generated/openapi", file), await freePort(), { quiet: true });
    }, 60_000);
    afterAll(async () => mock?.stop());

    for (const op of ops) {
      it(`X-MOCK-1 ${op.operationId} answers every documented status, in each of its content types, with each of its examples`, async () => {
        const statuses = Object.entries(op.responses);
        expect(statuses.length).toBeGreaterThan(0);
        const successes = statuses.filter(([s]) => s.startsWith("2") || s.startsWith("3"));
        expect(successes.length, "at least one success response").toBeGreaterThan(0);
        for (const [status, response] of statuses) {
          const success = status.startsWith("2") || status.startsWith("3");
          // A response without a body is one answer to obtain; else each content type (asked for by Accept) and each example.
          const media = Object.entries(response.content ?? {});
          for (const [mediaTypeName, content] of media.length ? media : [[undefined, undefined] as const]) {
            const examples = Object.entries(content?.examples ?? {});
            const binary = mediaTypeName !== undefined && /^(image|application\/octet-stream)/.test(mediaTypeName);
            if (success && !binary) expect(examples.length > 0 || !response.content, `${status} has an example`).toBe(true);
            for (const [name, example] of examples.length ? examples : [[undefined, undefined] as const]) {
              const prefer = [`code=${status}`, ...(name ? [`example=${name}`] : [])].join(", ");
              const { url, init } = requestFor(op, schemes, { prefer, ...(mediaTypeName ? { accept: mediaTypeName } : {}) });
              const res = await fetch(`${mock.url}${url}`, init);
              const text = await res.text();
              const what = `${op.method} ${url} Prefer: ${prefer}${mediaTypeName ? `, Accept: ${mediaTypeName}` : ""}: ${text.slice(0, 300)}`;
              expect(res.status, what).toBe(Number(status));
              // Response headers answer their documented example: an error's `Retry-After` or
              // `WWW-Authenticate` without one would be Prism's invention (-2147483648, "string").
              for (const [header, definition] of Object.entries(response.headers ?? {})) {
                if (!success)
                  expect(
                    definition.example !== undefined || definition.schema?.enum !== undefined,
                    `${status} header ${header} has an example`,
                  ).toBe(true);
                if (definition.example !== undefined)
                  expect(res.headers.get(header), `${status} header ${header}`).toBe(String(definition.example));
              }
              if (mediaTypeName) expect(mediaType(res.headers.get("content-type")), what).toBe(mediaType(mediaTypeName));
              if (example && example.value !== undefined) {
                const body = typeof example.value === "string" ? text : JSON.parse(text);
                expect(body).toEqual(example.value);
              }
              obtained.push({
                document: basename(file, ".yaml"),
                operationId: op.operationId,
                status,
                contentType: mediaTypeName ?? "",
                example: name ?? null,
              });
            }
          }
        }
      });
    }

    // Operations that need credentials (not those where anonymous access, `{}`, is one alternative).
    const secured = ops.filter((op) => op.security?.length && op.security.every((s) => Object.keys(s).length > 0));
    const withJsonBody = ops.filter((op) => op.requestBody?.content["application/json"]);
    it(`X-MOCK-2 requests that break the contract are refused (${file})`, async () => {
      for (const op of secured) {
        const { url, init } = requestFor(op, schemes);
        delete (init.headers as Record<string, string>).authorization;
        const res = await fetch(`${mock.url}${url}`, init);
        expect(res.status, `${op.operationId} without credentials`).toBe(401);
      }
      for (const op of withJsonBody) {
        const { url, init } = requestFor(op, schemes);
        const res = await fetch(`${mock.url}${url}`, { ...init, body: JSON.stringify({ notAField: true, nested: [1, 2] }) });
        expect([400, 422], `${op.operationId} with a body that breaks the schema`).toContain(res.status);
      }
    });

    // The service's answer to such a body (server/http/app.ts): 400 naming each field, whatever Prism's canned example says.
    const problem400 = withJsonBody.filter((op) => op.responses["400"]?.content?.["application/problem+json"]);
    it.runIf(problem400.length)(`X-MOCK-4 a body that breaks the contract is the service's 400 naming the field (${file})`, async () => {
      for (const op of problem400) {
        const { url, init } = requestFor(op, schemes);
        const res = await fetch(`${mock.url}${url}`, { ...init, body: JSON.stringify({ notAField: true }) });
        const body = (await res.json()) as { code?: string; errors?: Array<{ field: string; message: string }> };
        expect(res.status, op.operationId).toBe(400);
        expect(body.code, op.operationId).toBe("validation_failed");
        expect(body.errors, op.operationId).toContainEqual({ field: "body.notAField", message: "is not a known field" });
      }
    });
  });
}

// Last (vitest runs a file's tests in order): the record for contract-coverage.txt, and its gate.
it("X-MOCK-3 every response the documents declare, in each content type and with each documented example, is obtained from a mock", () => {
  const record: MockRecord = { generatedAt: new Date().toISOString(), obtained };
  mkdirSync(dirname(MOCK_RECORD_FILE), { recursive: true });
  writeFileSync(MOCK_RECORD_FILE, `${JSON.stringify(record, null, 2)}\n`);
  expect(mockCoverage(declaredResponses(contractDocuments()), record).missing).toEqual([]);
});
