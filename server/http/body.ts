/**
 * Request bodies of every service: JSON and form-urlencoded, read as UTF-8 only, bounded in size
 * and in nesting before anything walks them.
 *
 * - Only UTF-8 (RFC 8259 §8.1 for JSON; the forms are our own pages' and OAuth clients'): a
 *   `charset` other than UTF-8 is 415 (X-API-4) before the body is read, and bytes that are not
 *   UTF-8 are 400 (X-API-2), never silently turned into U+FFFD and stored.
 * - JSON nests at most MAX_JSON_DEPTH levels (X-API-9). The depth is counted on the raw text
 *   before JSON.parse, so no walk over a parsed body (the NUL check, validation, hashing,
 *   JSON.stringify, which V8 runs recursively) ever meets a deeper one.
 * - Forms are flat `name=value` pairs, as HTML forms and RFC 6749 send them: `a[b]=c` is a field
 *   named `a[b]` (an unknown field), not a nested object; a repeated name becomes a list, which the
 *   string-typed contract refuses.
 *
 * Bytes are read by co-body (raw-body + inflation: the length limit counts decompressed bytes);
 * JSON is parsed by @hapi/bourne (which refuses `__proto__` keys), forms by qs.
 */
import type Koa from "koa";
import coBody from "co-body";
import bourne from "@hapi/bourne";
import qs from "qs";
import { HttpProblem } from "./problem.ts";

/** Deepest nesting of arrays and objects in a JSON body (X-API-9); the contract's deepest body nests 3. */
export const MAX_JSON_DEPTH = 32;

const PARSED_METHODS = new Set(["POST", "PUT", "PATCH"]);
const JSON_TYPE = "application/json";
const FORM_TYPE = "application/x-www-form-urlencoded";
/** `charset` values that name UTF-8 (RFC 3629; `utf8` is a common spelling of it). */
const UTF8_LABEL = /^utf-?8$/i;
/** Fatal: a byte sequence that is not UTF-8 throws instead of becoming U+FFFD. Strips a leading BOM (RFC 8259 §8.1 allows ignoring it). */
const utf8 = new TextDecoder("utf-8", { fatal: true });

export const depthProblem = () =>
  new HttpProblem(400, "validation_failed", "The request does not match the contract.", {
    errors: [{ field: "body", message: `must not nest arrays and objects more than ${MAX_JSON_DEPTH} levels deep` }],
  });

/**
 * Parses JSON and form bodies of POST, PUT and PATCH into `ctx.request.body` (`{}` when there is
 * none, or when the content type is another one: the router answers that with 415 for operations
 * that take a body). Throws HttpProblem 400/413/415.
 */
export function bodyParser(options: { limitBytes: number }): Koa.Middleware {
  return async (ctx, next) => {
    if (!PARSED_METHODS.has(ctx.method) || ctx.request.body !== undefined) return next();
    const kind = ctx.request.is(JSON_TYPE) ? "json" : ctx.request.is(FORM_TYPE) ? "form" : null;
    if (!kind) {
      ctx.request.body = {};
      return next();
    }
    const charset = ctx.request.charset;
    if (charset && !UTF8_LABEL.test(charset)) {
      throw new HttpProblem(
        415,
        "unsupported_media_type",
        `Request bodies are read as UTF-8 only; charset=${charset.slice(0, 40)} is not accepted.`,
        {
          headers: { "Accept-Post": `${JSON_TYPE}, ${FORM_TYPE}` },
        },
      );
    }
    const text = decode(await readBytes(ctx, options.limitBytes), kind);
    ctx.request.body = kind === "json" ? parseJson(text) : parseForm(text);
    return next();
  };
}

declare module "koa" {
  interface Request {
    body?: unknown;
  }
}

async function readBytes(ctx: Koa.Context, limitBytes: number): Promise<Buffer> {
  try {
    // encoding false: the raw bytes, decoded below with a decoder that refuses invalid UTF-8.
    return (await coBody.text(ctx, { limit: limitBytes, encoding: false as unknown as string })) as Buffer;
  } catch (err) {
    throw readProblem(err as Error & { status?: number; type?: string; limit?: number });
  }
}

/** Errors of raw-body and inflation → the documented 413, 415 or 400. */
function readProblem(err: Error & { status?: number; type?: string; limit?: number }): HttpProblem {
  if (err.status === 413 || err.type === "entity.too.large") {
    return new HttpProblem(413, "payload_too_large", `The request body exceeds ${err.limit ?? "the limit of"} bytes.`);
  }
  if (err.status === 415) {
    return new HttpProblem(
      415,
      "unsupported_media_type",
      "The request body's Content-Encoding is not supported; send it as is, or as gzip, deflate or br.",
      {
        headers: { "Accept-Encoding": "gzip, deflate, br" },
      },
    );
  }
  return new HttpProblem(400, "malformed_body", "The request body could not be read.");
}

function decode(bytes: Buffer, kind: "json" | "form"): string {
  try {
    return utf8.decode(bytes);
  } catch {
    throw kind === "json"
      ? new HttpProblem(400, "malformed_json", "The request body is not valid JSON: it is not UTF-8.")
      : new HttpProblem(400, "malformed_body", "The request body is not UTF-8.");
  }
}

/** RFC 8259 text whose top level is an object or array (a bare value is refused), `{}` when empty. */
function parseJson(text: string): unknown {
  if (text.trim() === "") return {};
  if (!/^[\x20\x09\x0a\x0d]*[[{]/.test(text))
    throw new HttpProblem(400, "malformed_json", "The request body is not valid JSON: it must be an object.");
  if (exceedsDepth(text, MAX_JSON_DEPTH)) throw depthProblem();
  try {
    return bourne.parse(text, { protoAction: "error" });
  } catch {
    throw new HttpProblem(400, "malformed_json", "The request body is not valid JSON.");
  }
}

/**
 * True when the JSON text opens more than `limit` arrays and objects at once. One pass over the
 * characters with a counter: brackets inside strings (escapes included) do not count, and text
 * that is not JSON at all is left for the parser to refuse.
 */
export function exceedsDepth(text: string, limit: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c /* \ */) i++;
      else if (c === 0x22 /* " */) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b /* [ */ || c === 0x7b /* { */) {
      if (++depth > limit) return true;
    } else if (c === 0x5d /* ] */ || c === 0x7d /* } */) depth--;
  }
  return false;
}

/** Flat `name=value` pairs; invalid percent-encoded UTF-8 and more than 1000 pairs are 400. */
function parseForm(text: string): Record<string, unknown> {
  try {
    return qs.parse(text, {
      depth: 0,
      allowDots: false,
      parseArrays: false,
      plainObjects: true,
      parameterLimit: 1000,
      throwOnLimitExceeded: true,
      decoder: (s) => decodeURIComponent(s.replace(/\+/g, " ")),
    });
  } catch {
    throw new HttpProblem(400, "malformed_body", "The form body is malformed: a value is not UTF-8 or there are too many fields.");
  }
}
