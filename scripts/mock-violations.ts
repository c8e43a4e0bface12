/**
 * A mock's answer to a request that breaks the contract, as the service gives it (X-MOCK-4).
 *
 * Prism refuses such a request with the first example its document declares for 400 (or 422), so
 * `POST /repository {}` would be told `body.email` must match format "email" (login's example):
 * the real reasons are only in Prism's `sl-violations` header, which a page cannot read. The
 * service answers 400 `validation_failed` with one `{field, message}` per broken rule
 * (`server/http/contract-checks.ts`, `toFieldErrors`); this module builds that same answer from the header.
 *
 * It only ever replaces an answer with one the document declares: the operation must declare a 400
 * `application/problem+json`, and the new body must validate against it. Anything else (the token
 * endpoint's RFC 6749 errors, a header Prism cut short, violations of Prism's own response) keeps
 * Prism's answer.
 */
import type { Operation } from "openapi-backend";
import type { ContractDocument } from "../support/contract/documents.ts";
import { checkResponse, matchOperation } from "../support/contract/validator.ts";
import { fieldPath } from "../server/http/contract-checks.ts";
import { badRequest, type FieldError } from "../server/http/problem.ts";

/** One entry of `sl-violations`: `location` is `["request", "body" | "query" | "path" | "header", ...path]`. */
interface Violation {
  location: string[];
  severity: string;
  code: string;
  message: string;
}

const PROBLEM = "application/problem+json";

/** Where in a request the service names fields (Prism's security violations, `["request"]`, are not field errors). */
const PLACES = new Set(["body", "query", "path", "header"]);

/** The errors Prism found in the request's fields (not in its own response), or none when the header is absent or cut short. */
export function requestViolations(header: string | undefined): Violation[] {
  if (!header) return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(header); // "Too many violations! …" (cut at 8 KiB) is not JSON: Prism's answer stays
  } catch {
    return [];
  }
  if (!Array.isArray(parsed)) return [];
  return parsed.filter(
    (v): v is Violation =>
      Array.isArray(v?.location) &&
      v.location[0] === "request" &&
      PLACES.has(v.location[1]) &&
      v.severity === "Error" &&
      typeof v.message === "string",
  );
}

/**
 * Prism lower-cases query and path parameter names; the service names them as declared
 * (`query.pageSize`, `path.repositoryId`), and header names in lower case, as Node gives them.
 */
function declaredName(operation: Operation, where: string, name: string): string {
  if (where !== "query" && where !== "path") return name;
  const parameters = (operation.parameters ?? []) as Array<{ name?: string; in?: string }>;
  return parameters.find((p) => p.in === where && p.name?.toLowerCase() === name.toLowerCase())?.name ?? name;
}

/**
 * A violation as the service words it. Prism's message is Ajv's after a description of the place
 * (`Request body property name `, `Request query parameter page `); Ajv's `required` and
 * `additionalProperties` name the property in the message, where the service names it in `field`.
 */
export function fieldError(operation: Operation, v: Violation): FieldError {
  const [, where, ...path] = v.location as [string, string, ...string[]];
  const place = `Request ${where} ${path.length ? (where === "body" ? "property " : "parameter ") : ""}${path.join(".")}${path.length ? " " : ""}`;
  let message = v.message.startsWith(place) ? v.message.slice(place.length) : v.message;
  let named: string | undefined;
  if (v.code === "required") {
    named = /^must have required property '(.+)'$/.exec(message)?.[1];
    if (named) message = "is required";
  } else if (v.code === "additionalProperties" || v.code === "unevaluatedProperties") {
    named = /(?:; found |: )'(.+)'$/.exec(message)?.[1];
    if (named) message = "is not a known field";
  } else if (v.code === "enum") {
    message = message.replace(/: .*$/, ""); // Prism appends the allowed values; Ajv's message (the service's) does not
  }
  const parts = [where, ...path, ...(named ? [named] : [])];
  if (parts.length > 1 && where !== "body") parts[1] = declaredName(operation, where, parts[1]!);
  return { field: fieldPath(parts), message };
}

/**
 * The service's 400 for a request Prism refused with `status` and these headers, or undefined to
 * keep Prism's answer.
 */
export function contractProblem(
  doc: ContractDocument,
  request: { method: string; path: string },
  answer: { status: number; headers: Record<string, string | string[] | undefined> },
): { status: 400; contentType: string; body: string } | undefined {
  if (answer.status !== 400 && answer.status !== 422) return undefined;
  const header = answer.headers["sl-violations"];
  const violations = requestViolations(Array.isArray(header) ? header[0] : header);
  if (!violations.length) return undefined;
  const operation = matchOperation(doc, request.method, request.path);
  const declared = (operation?.responses as Record<string, { content?: Record<string, unknown> }> | undefined)?.["400"];
  if (!operation || !declared?.content?.[PROBLEM]) return undefined;

  const seen = new Set<string>();
  const errors = violations
    .map((v) => fieldError(operation, v))
    .filter((e) => !seen.has(`${e.field} ${e.message}`) && seen.add(`${e.field} ${e.message}`));
  const body = JSON.stringify(badRequest("The request does not match the contract.", errors).toBody());
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(answer.headers)) if (typeof value === "string") headers[name.toLowerCase()] = value;
  headers["content-type"] = PROBLEM;
  const verdict = checkResponse(doc, operation, { status: 400, headers, body: Buffer.from(body) });
  return verdict.errors.length ? undefined : { status: 400, contentType: PROBLEM, body };
}
