/**
 * Checks one answered HTTP exchange against its contract document: which operation it was, under
 * which declared status and content type it falls, and whether it holds to the document (status
 * declared, content type declared, body valid against the schema, declared headers present and
 * valid). openapi-backend routes (the services' own router) and validates headers and receiver
 * requests; bodies of every media type are checked with its Ajv (its own response validator only
 * looks at `application/json`, so `application/problem+json` would pass unchecked).
 */
import { gunzipSync, inflateSync, brotliDecompressSync } from "node:zlib";
import { OpenAPIBackend, OpenAPIValidator, ValidationContext, type Operation } from "openapi-backend";
import addFormats from "ajv-formats";
import type { ValidateFunction } from "ajv";
import { declaredStatus, mediaType, type ContractDocument } from "./documents.ts";

export interface Verdict {
  operationId: string;
  /** The declared status the answer falls under ("200", "4XX", "default"), or the bare number when undeclared. */
  status: string;
  /** The answer's media type as declared ("" when the declared response has no body). */
  contentType: string;
  /** Every way the exchange breaks the document; empty when it holds. */
  errors: string[];
}

interface Loaded {
  api: OpenAPIBackend;
  ajv: ReturnType<OpenAPIValidator["getAjv"]>;
  /** Headers arrive as text: this one coerces `60` to the integer a schema asks for. */
  headerAjv: ReturnType<OpenAPIValidator["getAjv"]>;
  compiled: Map<string, ValidateFunction>;
}

const loaded = new Map<string, Loaded>();

function load(doc: ContractDocument): Loaded {
  let entry = loaded.get(doc.name);
  if (!entry) {
    const api = new OpenAPIBackend({
      // A copy: quick mode dereferences the object it is given in place.
      definition: structuredClone(doc.definition),
      quick: true, // no document validation (lint does that); validators compiled on first use
      strict: false,
      validate: true,
      coerceTypes: true, // headers arrive as strings
      ajvOpts: { allErrors: true, strict: false },
      customizeAjv: (ajv) => {
        addFormats.default(ajv);
        return ajv;
      },
    });
    void api.init(); // synchronous in quick mode with an object definition
    entry = {
      api,
      ajv: api.validator.getAjv(ValidationContext.Response),
      headerAjv: api.validator.getAjv(ValidationContext.ResponseHeaders, { coerceTypes: true }),
      compiled: new Map(),
    };
    loaded.set(doc.name, entry);
  }
  return entry;
}

/** The operation of a service document that a request is routed to, as the services route. */
export function matchOperation(doc: ContractDocument, method: string, path: string): Operation | undefined {
  try {
    return load(doc).api.router.matchOperation({ method: method.toLowerCase(), path, headers: {} }, true) ?? undefined;
  } catch {
    return undefined;
  }
}

/** Operations of a receiver document a request with this method can be (its URL path is the webhook's own). */
export function receiverOperations(doc: ContractDocument, method: string): Operation[] {
  return load(doc)
    .api.router.getOperations()
    .filter((op) => op.method.toLowerCase() === method.toLowerCase());
}

/** Body bytes as they were sent, before any Content-Encoding. */
export function decodeBody(bytes: Buffer, encoding: string | undefined): Buffer {
  switch ((encoding ?? "").trim().toLowerCase()) {
    case "gzip":
    case "x-gzip":
      return gunzipSync(bytes);
    case "deflate":
      return inflateSync(bytes);
    case "br":
      return brotliDecompressSync(bytes);
    default:
      return bytes;
  }
}

const isJson = (type: string) => type === "application/json" || type.endsWith("+json");
const isText = (type: string) =>
  type.startsWith("text/") ||
  type === "application/yaml" ||
  type === "application/javascript" ||
  type.endsWith("+xml") ||
  type === "application/xml";

/** openapi-backend's own compile step (it turns reference cycles of a dereferenced schema back into `$ref`s); private in its types. */
const compileSchema = (OpenAPIValidator as unknown as { compileSchema(ajv: unknown, schema: object): ValidateFunction }).compileSchema.bind(
  OpenAPIValidator,
);

function schemaErrors(entry: Loaded, key: string, schema: unknown, value: unknown): string[] {
  let validate = entry.compiled.get(key);
  if (!validate) {
    validate = compileSchema(entry.ajv, schema as object);
    entry.compiled.set(key, validate);
  }
  if (validate(value)) return [];
  return (validate.errors ?? [])
    .slice(0, 10)
    .map(
      (e) =>
        `body${e.instancePath} ${e.message ?? "is invalid"}${e.params && "additionalProperty" in e.params ? ` (${String(e.params.additionalProperty)})` : ""}`,
    );
}

/** A body checked against one declared media type's schema. */
function bodyErrors(entry: Loaded, key: string, type: string, schema: unknown, body: Buffer): string[] {
  if (!schema) return [];
  if (isJson(type)) {
    let value: unknown;
    try {
      value = JSON.parse(body.toString("utf8"));
    } catch {
      return [`the ${type} body is not JSON: ${JSON.stringify(body.toString("utf8").slice(0, 80))}`];
    }
    return schemaErrors(entry, key, schema, value);
  }
  if (isText(type)) return schemaErrors(entry, key, schema, body.toString("utf8"));
  return []; // binary (image/gif, octet-stream): the schema says `format: binary`, the media type was checked
}

/**
 * Declared response headers: present when `required`, valid against their schema when present.
 * (openapi-backend's header check treats every declared header as required or none of them.)
 */
function headerErrors(entry: Loaded, key: string, declared: Record<string, unknown>, headers: Record<string, string>): string[] {
  let validate = entry.compiled.get(`headers ${key}`);
  if (!validate) {
    const properties: Record<string, unknown> = {};
    const required: string[] = [];
    for (const [name, header] of Object.entries(declared) as Array<[string, { required?: boolean; schema?: unknown }]>) {
      properties[name.toLowerCase()] = header.schema ?? {};
      if (header.required) required.push(name.toLowerCase());
    }
    validate = compileSchema(entry.headerAjv, { type: "object", properties, required });
    entry.compiled.set(`headers ${key}`, validate);
  }
  const copy = { ...headers };
  if (validate(copy)) return [];
  return (validate.errors ?? []).map((e) =>
    e.keyword === "required"
      ? `header ${String(e.params.missingProperty)} is required`
      : `header ${e.instancePath.slice(1)} ${e.message ?? "is invalid"}`,
  );
}

/** Checks an answer of a service (or of a receiver) to `operation`. */
export function checkResponse(
  doc: ContractDocument,
  operation: Operation,
  answer: { status: number; headers: Record<string, string>; body: Buffer },
  /** bodyUnread: the test stopped reading; undeclaredBodyIgnored: a receiver's body where none is declared (our services read only the status). */
  options: { bodyUnread?: boolean; undeclaredBodyIgnored?: boolean } = {},
): Verdict {
  const entry = load(doc);
  const responses = (operation.responses ?? {}) as Record<
    string,
    { content?: Record<string, { schema?: unknown }>; headers?: Record<string, unknown> }
  >;
  const status = declaredStatus(Object.keys(responses), answer.status);
  const type = mediaType(answer.headers["content-type"]);
  const errors: string[] = [];
  if (!status) {
    return {
      operationId: operation.operationId!,
      status: String(answer.status),
      contentType: type,
      errors: [`status ${answer.status} is not declared (declared: ${Object.keys(responses).join(", ")})`],
    };
  }
  const content = responses[status]?.content ?? {};
  const declaredTypes = Object.keys(content);
  let contentType = "";
  if (!declaredTypes.length) {
    // A 3xx may carry a short hypertext note (RFC 9110 §15.4) that clients ignore; any other body is undeclared.
    if (answer.body.length > 0 && !options.bodyUnread && !options.undeclaredBodyIgnored && !(answer.status >= 300 && answer.status < 400))
      errors.push(`a ${type || "body"} of ${answer.body.length} bytes where the document declares none`);
  } else {
    contentType = declaredTypes.find((t) => mediaType(t) === type) ?? "";
    if (!contentType) {
      errors.push(`content type ${type || "(none)"} is not declared for ${status} (declared: ${declaredTypes.join(", ")})`);
      contentType = type;
    } else if (!options.bodyUnread) {
      errors.push(
        ...bodyErrors(entry, `${operation.operationId} ${status} ${contentType}`, contentType, content[contentType]?.schema, answer.body),
      );
    }
  }
  errors.push(...headerErrors(entry, `${operation.operationId} ${status}`, responses[status]?.headers ?? {}, answer.headers));
  return { operationId: operation.operationId!, status, contentType, errors };
}

/** Checks a request our service SENT to a receiver against a receiver document's operation. */
export function checkRequest(
  doc: ContractDocument,
  operation: Operation,
  sent: { headers: Record<string, string>; body: Buffer },
): string[] {
  const entry = load(doc);
  const errors: string[] = [];
  const accepted = Object.keys((operation.requestBody as { content?: Record<string, unknown> } | undefined)?.content ?? {});
  const type = mediaType(sent.headers["content-type"]);
  if (accepted.length && !accepted.some((t) => mediaType(t) === type))
    errors.push(`request content type ${type || "(none)"} is not declared (declared: ${accepted.join(", ")})`);
  let body: unknown = sent.body.toString("utf8");
  if (isJson(type)) {
    try {
      body = JSON.parse(body as string);
    } catch {
      errors.push("the request body is not JSON");
    }
  }
  const result = entry.api.validator.validateRequest(
    { method: operation.method, path: operation.path, headers: sent.headers, query: {}, body },
    operation,
  );
  for (const e of result.errors ?? []) errors.push(`request ${e.instancePath || ""} ${e.message ?? "is invalid"}`.replace(/\s+/g, " "));
  return errors;
}
