/**
 * The one error type handlers and domain modules throw. It carries everything the central error
 * handler needs to answer in the documented RFC 9457 shape (spec/shared/errors.tsp).
 */
import { STATUS_CODES } from "node:http";
import { DomainError, type Challenge, type DomainErrorKind, type FieldError } from "../domain/errors.ts";

export type { FieldError };

export class HttpProblem extends Error {
  readonly status: number;
  readonly code: string;
  readonly errors: FieldError[] | undefined;
  readonly headers: Record<string, string>;

  constructor(status: number, code: string, detail: string, options: { errors?: FieldError[]; headers?: Record<string, string> } = {}) {
    super(detail);
    this.name = "HttpProblem";
    this.status = status;
    this.code = code;
    this.errors = options.errors;
    this.headers = options.headers ?? {};
  }

  /** The `application/problem+json` body. */
  toBody(): Record<string, unknown> {
    return {
      type: "about:blank",
      title: STATUS_CODES[this.status] ?? "Error",
      status: this.status,
      code: this.code,
      detail: this.message,
      ...(this.errors ? { errors: this.errors } : {}),
    };
  }
}

/**
 * A complete error answer in a format other than problem details (an HTML page, an RFC 6749 §5.2
 * JSON body), for operations whose contract says so. Thrown by handlers; the central error handler
 * writes it as-is.
 */
export class HttpResponseError extends Error {
  readonly status: number;
  readonly body: unknown;
  readonly headers: Record<string, string | string[]>;
  readonly contentType: string;

  constructor(status: number, body: unknown, options: { headers?: Record<string, string | string[]>; contentType?: string } = {}) {
    super(`HTTP ${status}`);
    this.name = "HttpResponseError";
    this.status = status;
    this.body = body;
    this.headers = options.headers ?? {};
    this.contentType = options.contentType ?? "application/json";
  }
}

export const badRequest = (detail: string, errors?: FieldError[]) =>
  new HttpProblem(400, "validation_failed", detail, errors ? { errors } : {});
export const notFound = (detail = "No such resource.") => new HttpProblem(404, "not_found", detail);
export const forbidden = (detail: string) => new HttpProblem(403, "forbidden", detail);
export const conflict = (detail: string) => new HttpProblem(409, "conflict", detail);

/**
 * RFC 6750 §3: a 401 with a `WWW-Authenticate: Bearer` challenge. Without credentials the challenge
 * carries no error code (§3.1); with bad ones it says `invalid_token`.
 */
export function bearerChallenge(realm: string, detail: string, error?: "invalid_token" | "invalid_request"): HttpProblem {
  return new HttpProblem(401, error ?? "unauthorized", detail, {
    headers: { "WWW-Authenticate": challengeHeader({ realm, ...(error ? { error } : {}) }, detail) },
  });
}

/** RFC 6750 §3.1: 403 `insufficient_scope`, the challenge naming the scope the request needs when one would do. */
export function insufficientScope(realm: string, detail: string, scope?: string): HttpProblem {
  return new HttpProblem(403, "insufficient_scope", detail, {
    headers: { "WWW-Authenticate": `Bearer realm="${realm}", error="insufficient_scope"${scope ? `, scope="${scope}"` : ""}` },
  });
}

function challengeHeader(challenge: Challenge, detail: string): string {
  const params = [`realm="${challenge.realm}"`];
  if (challenge.error) params.push(`error="${challenge.error}"`, `error_description="${detail.replace(/["\\]/g, "")}"`);
  if (challenge.algs) params.push(`algs="${challenge.algs}"`);
  return `${challenge.scheme ?? "Bearer"} ${params.join(", ")}`;
}

const STATUS_OF: Record<DomainErrorKind, number> = {
  invalid: 400,
  unauthenticated: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  refused: 422,
  rate_limited: 429,
};

/** The HTTP answer of a domain error: its kind's status, its code and detail, and the headers its kind calls for. */
export function problemOf(err: DomainError): HttpProblem {
  const headers: Record<string, string> = {};
  if (err.challenge) headers["WWW-Authenticate"] = challengeHeader(err.challenge, err.message);
  if (err.challenge?.nonce) headers["DPoP-Nonce"] = err.challenge.nonce;
  if (err.retryAfterSeconds !== undefined) {
    const wait = String(err.retryAfterSeconds);
    headers["Retry-After"] = wait;
    // draft-ietf-httpapi-ratelimit-headers: the budget that ran out, none of it left, refilled in `wait` s.
    if (err.limitPerSecond !== undefined)
      Object.assign(headers, { "RateLimit-Limit": String(err.limitPerSecond), "RateLimit-Remaining": "0", "RateLimit-Reset": wait });
  }
  return new HttpProblem(STATUS_OF[err.kind], err.code, err.message, { ...(err.errors ? { errors: err.errors } : {}), headers });
}

/** `err` as an HTTP problem when it is one or a domain error, else undefined (a bug: a 500). */
export function asProblem(err: unknown): HttpProblem | undefined {
  if (err instanceof HttpProblem) return err;
  if (err instanceof DomainError) return problemOf(err);
  return undefined;
}
