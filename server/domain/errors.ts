/**
 * The errors domain modules throw: what went wrong in the service's own terms, never an HTTP
 * status or header. The HTTP layer (server/http/problem.ts, `problemOf`) turns each kind into the
 * documented RFC 9457 answer; a command-line caller prints `detail`. `code` is the stable code
 * clients branch on (spec/shared/errors.tsp), so it is chosen here, where the rule lives.
 */

export interface FieldError {
  field: string;
  message: string;
}

/** The bearer challenge of a refused credential (RFC 6750 §3): the realm, and the error code once a token was shown. */
export interface Challenge {
  realm: string;
  error?: "invalid_token" | "invalid_request" | "invalid_dpop_proof" | "use_dpop_nonce";
  /** The authentication scheme challenged: `Bearer` (RFC 6750) unless `DPoP` (RFC 9449 §7.1). */
  scheme?: "Bearer" | "DPoP";
  /** For `DPoP`: the proof algorithms accepted, space-separated. */
  algs?: string;
  /** For `DPoP`: the server nonce the next proof must carry, sent as `DPoP-Nonce` (RFC 9449 §9). */
  nonce?: string;
}

export type DomainErrorKind =
  /** The input breaks a rule of the request's shape or values (field errors name each). */
  | "invalid"
  /** The caller is not (or no longer) authenticated. */
  | "unauthenticated"
  /** Authenticated, but not allowed to do this. */
  | "forbidden"
  /** The thing named does not exist (or is not the caller's to see). */
  | "not_found"
  /** The current state forbids it (taken, in progress, of the wrong type). */
  | "conflict"
  /** Well-formed and allowed, but refused by a business rule. */
  | "refused"
  /** Too many requests; come back after `retryAfterSeconds`. */
  | "rate_limited";

export interface DomainErrorOptions {
  errors?: FieldError[];
  challenge?: Challenge;
  retryAfterSeconds?: number;
  /** For `rate_limited`: the budget per second that was exhausted, when there is one to announce. */
  limitPerSecond?: number;
}

export class DomainError extends Error {
  readonly kind: DomainErrorKind;
  readonly code: string;
  readonly errors: FieldError[] | undefined;
  readonly challenge: Challenge | undefined;
  readonly retryAfterSeconds: number | undefined;
  readonly limitPerSecond: number | undefined;

  constructor(kind: DomainErrorKind, code: string, detail: string, options: DomainErrorOptions = {}) {
    super(detail);
    this.name = "DomainError";
    this.kind = kind;
    this.code = code;
    this.errors = options.errors;
    this.challenge = options.challenge;
    this.retryAfterSeconds = options.retryAfterSeconds;
    this.limitPerSecond = options.limitPerSecond;
  }

  /** The human-readable explanation (the problem's `detail`). */
  get detail(): string {
    return this.message;
  }
}

export const notFound = (detail = "No such resource.") => new DomainError("not_found", "not_found", detail);
export const forbidden = (detail: string, code = "forbidden") => new DomainError("forbidden", code, detail);
export const conflict = (detail: string, code = "conflict") => new DomainError("conflict", code, detail);
export const invalid = (code: string, detail: string, errors?: FieldError[]) =>
  new DomainError("invalid", code, detail, errors ? { errors } : {});
export const refused = (code: string, detail: string, errors?: FieldError[]) =>
  new DomainError("refused", code, detail, errors ? { errors } : {});
export const rateLimited = (detail: string, retryAfterSeconds: number, limitPerSecond?: number) =>
  new DomainError("rate_limited", "rate_limited", detail, {
    retryAfterSeconds,
    ...(limitPerSecond === undefined ? {} : { limitPerSecond }),
  });

/**
 * A refused credential. Without a token the code is `unauthorized` and the challenge names no error
 * (RFC 6750 §3.1); with a bad one both say `invalid_token`.
 */
export const unauthenticated = (realm: string, detail: string, error?: Challenge["error"]) =>
  new DomainError("unauthenticated", error ?? "unauthorized", detail, { challenge: { realm, ...(error ? { error } : {}) } });

/** A refused credential that is not a bearer token (a password, a refresh token): no challenge. */
export const badCredentials = (code: string, detail: string) => new DomainError("unauthenticated", code, detail);
