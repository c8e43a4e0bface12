/**
 * HTTP transport to the repository-and-build service: JSON in, JSON or problem+json out. It knows
 * nothing about sessions; it only turns network failures into the one message users need.
 */
import type { components } from "../generated/types/repository.ts";
import { CliError } from "./errors.ts";

/** Every error body of the contract has this RFC 9457 shape. */
export type Problem = components["schemas"]["BadRequestError"];

export interface ApiResponse<T> {
  status: number;
  headers: Headers;
  /** The parsed JSON body of a 2xx answer (undefined for 204). */
  body: T | undefined;
  /** The problem body of a 4xx/5xx answer, when it sent one. */
  problem: Problem | undefined;
}

export interface RequestOptions {
  token?: string;
  json?: unknown;
  query?: Record<string, string | number | undefined>;
}

const DEFAULT_TIMEOUT_MS = 15_000;

export class ApiClient {
  readonly baseUrl: string;
  private readonly timeoutMs: number;

  constructor(baseUrl: string, timeoutMs = Number(process.env.RB_TIMEOUT_MS) || DEFAULT_TIMEOUT_MS) {
    this.baseUrl = baseUrl;
    this.timeoutMs = timeoutMs;
  }

  async request<T>(method: string, path: string, options: RequestOptions = {}): Promise<ApiResponse<T>> {
    const url = new URL(this.baseUrl + path);
    for (const [k, v] of Object.entries(options.query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
    const headers: Record<string, string> = { accept: "application/json, application/problem+json" };
    if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
    let body: string | undefined;
    if (options.json !== undefined) {
      headers["content-type"] = "application/json";
      body = JSON.stringify(options.json);
    }
    let res: Response;
    let text: string;
    try {
      res = await fetch(url, { method, headers, body, redirect: "error", signal: AbortSignal.timeout(this.timeoutMs) });
      text = await res.text();
    } catch (err) {
      throw new CliError(`Cannot reach the server at ${this.baseUrl}: ${networkReason(err, this.timeoutMs)}`);
    }
    let parsed: unknown;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      // A proxy's HTML error page or similar: not the service we expect.
      if (res.ok) throw new CliError(`The server at ${this.baseUrl} sent a response that is not JSON (HTTP ${res.status}). Is --server right?`);
      parsed = undefined;
    }
    const ok = res.status >= 200 && res.status < 300;
    return {
      status: res.status,
      headers: res.headers,
      body: ok ? (parsed as T) : undefined,
      problem: ok ? undefined : (parsed as Problem | undefined),
    };
  }
}

/** fetch() hides the socket error in `cause`; users want "connection refused", not "fetch failed". */
function networkReason(err: unknown, timeoutMs: number): string {
  if (err instanceof Error && (err.name === "TimeoutError" || err.name === "AbortError")) return `no answer within ${Math.round(timeoutMs / 1000)} s (timed out)`;
  const cause = (err as { cause?: { code?: string; message?: string } } | undefined)?.cause;
  const code = cause?.code;
  const known: Record<string, string> = {
    ECONNREFUSED: "connection refused",
    ENOTFOUND: "host not found",
    EAI_AGAIN: "host name lookup failed",
    ECONNRESET: "connection reset",
    ETIMEDOUT: "connection timed out",
    EHOSTUNREACH: "host unreachable",
    UND_ERR_CONNECT_TIMEOUT: "connection timed out",
    UND_ERR_SOCKET: "connection closed unexpectedly",
  };
  if (code) return `${known[code] ?? cause?.message ?? "network error"} (${code})`;
  return cause?.message ?? (err instanceof Error ? err.message : String(err));
}

/** RFC 6750 §3: a 401 naming `error="invalid_token"` means the token itself is bad (expired, revoked...). */
export function isInvalidToken(res: ApiResponse<unknown>): boolean {
  return res.status === 401 && /\berror="invalid_token"/.test(res.headers.get("www-authenticate") ?? "");
}
