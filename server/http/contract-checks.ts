/**
 * What the service app checks of a request and an answer against the OpenAPI document, beyond
 * openapi-backend's own validation: the media type of a body, NUL characters anywhere, field names
 * of the validator's errors in the contract's style, and (in tests) every answer against its
 * documented response.
 */
import type Koa from "koa";
import type { Context as ApiContext, OpenAPIBackend } from "openapi-backend";
import type { Logger } from "pino";
import { HttpProblem, type FieldError } from "./problem.ts";

/** 415 when a body arrives in a content type the operation does not declare. */
export function checkContentType(c: ApiContext, ctx: Koa.Context): void {
  const requestBody = c.operation?.requestBody as { content?: Record<string, unknown> } | undefined;
  if (!requestBody?.content) return;
  const hasBody = Number(ctx.get("content-length") || 0) > 0 || ctx.get("transfer-encoding") !== "";
  if (!hasBody) return; // a missing body is the validator's business (400 when required), not a media type error
  const accepted = Object.keys(requestBody.content);
  if (!accepted.some((t) => ctx.is(t))) {
    throw new HttpProblem(415, "unsupported_media_type", `This operation accepts ${accepted.join(" or ")}.`, {
      headers: { "Accept-Post": accepted.join(", ") },
    });
  }
}

/**
 * No text field accepts U+0000: PostgreSQL cannot store it and no legitimate value carries it, so
 * it is refused at the edge, the same on every storage (X-API-7). The walk keeps its own stack
 * rather than recursing, so no input shape can exhaust the call stack (JSON bodies are also bounded
 * to 32 levels before parsing, X-API-9).
 */
export function refuseNulCharacters(c: ApiContext): void {
  const errors: FieldError[] = [];
  const pending: Array<[value: unknown, field: string]> = [
    [c.request.params, "path"],
    [c.request.query, "query"],
    [c.request.requestBody, "body"],
  ];
  for (let next = pending.pop(); next; next = pending.pop()) {
    const [value, field] = next;
    if (typeof value === "string") {
      if (value.includes("\u0000")) errors.push({ field, message: "must not contain the NUL character (U+0000)" });
    } else if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--) pending.push([value[i], `${field}[${i}]`]);
    } else if (value && typeof value === "object") {
      const entries = Object.entries(value);
      for (let i = entries.length - 1; i >= 0; i--) pending.push([entries[i]![1], `${field}.${entries[i]![0]}`]);
    }
  }
  if (errors.length) throw new HttpProblem(400, "validation_failed", "The request does not match the contract.", { errors });
}

/** `["body", "redirectUris", "0"]` → `body.redirectUris[0]`: the style of every field name in error bodies. */
export const fieldPath = (parts: string[]): string =>
  parts.reduce((path, part, i) => (i === 0 ? part : /^\d+$/.test(part) ? `${path}[${part}]` : `${path}.${part}`), "");

/** Ajv errors → `{field, message}` with fields named `body.email`, `query.pageSize`, `path.id`. */
/** The message of a field the contract does not declare (a problem mapper may tell it from a wrong value). */
export const UNKNOWN_FIELD = "is not a known field";

export function toFieldErrors(errors: Array<{ instancePath: string; message?: string; params: Record<string, unknown> }>): FieldError[] {
  const seen = new Set<string>();
  const out: FieldError[] = [];
  for (const e of errors) {
    const parts = e.instancePath.split("/").filter(Boolean);
    if (parts[0] === "requestBody") parts[0] = "body";
    if (typeof e.params.missingProperty === "string") parts.push(e.params.missingProperty);
    if (typeof e.params.additionalProperty === "string") parts.push(e.params.additionalProperty);
    const field = parts.length ? fieldPath(parts) : "body";
    const message =
      typeof e.params.additionalProperty === "string"
        ? UNKNOWN_FIELD
        : typeof e.params.missingProperty === "string"
          ? "is required"
          : (e.message ?? "is invalid");
    const key = `${field} ${message}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push({ field, message });
  }
  return out;
}

/** An answer the document does not declare is a bug of ours: logged, and a 500 (VALIDATE_RESPONSES, on in tests). */
export function assertResponseMatchesSpec(
  api: OpenAPIBackend,
  c: ApiContext,
  result: { status: number; body?: unknown },
  logger: Logger,
): void {
  const validation = api.validateResponse(result.body ?? null, c.operation, result.status);
  if (validation.errors?.length) {
    logger.error(
      { operationId: c.operation.operationId, status: result.status, errors: validation.errors },
      "response violates the OpenAPI document",
    );
    throw new Error(`response of ${c.operation.operationId} violates the OpenAPI document`);
  }
}
