/**
 * HTTP transport to the repository-and-build service: the typed client openapi-fetch builds from
 * the repository SDK document's types (generated/sdk/types/repository.ts), so every path, parameter
 * and body the CLI sends is checked against the contract at compile time. It knows nothing about
 * sessions; it only turns network failures, and answers from a server that is not a repository
 * service (server-identity.ts), into the one message users need.
 */
import createClient, { type Client } from "openapi-fetch";
import type { components, paths } from "../generated/sdk/types/repository.ts";
import { CliError } from "./errors.ts";
import { identifyServer, notARepositoryService, type ServerKind, type Suspicion, suspicionOf } from "./server-identity.ts";

/** Every error body of the contract has this RFC 9457 shape. */
export type Problem = components["schemas"]["Problem"];

/** The typed client of the repository API. */
export type RepositoryClient = Client<paths>;

/** What an openapi-fetch call resolves to. */
export interface Sent {
  data?: unknown;
  error?: unknown;
  response: Response;
}

export interface ApiResponse<T> {
  status: number;
  headers: Headers;
  /** The parsed JSON body of a 2xx answer (undefined for 204). */
  body: T | undefined;
  /** The problem body of a 4xx/5xx answer, when it sent one. */
  problem: Problem | undefined;
}

const DEFAULT_TIMEOUT_MS = 15_000;

export class ApiClient {
  readonly baseUrl: string;
  private readonly timeoutMs: number;
  private readonly http: RepositoryClient;
  /** What the server said it is, asked at most once, when an answer looked foreign. */
  private kind: Promise<ServerKind> | undefined;

  constructor(baseUrl: string, timeoutMs = Number(process.env.RB_TIMEOUT_MS) || DEFAULT_TIMEOUT_MS) {
    this.baseUrl = baseUrl;
    this.timeoutMs = timeoutMs;
    this.http = createClient<paths>({
      baseUrl,
      headers: { accept: "application/json, application/problem+json" },
      // Redirects are refused (a token never follows one elsewhere); the timeout covers the body too.
      fetch: (request) => fetch(request, { redirect: "error", signal: AbortSignal.timeout(this.timeoutMs) }),
    });
  }

  /** One typed call (`(api) => api.POST("/auth/login", …)`), its answer as status, body and problem. */
  async send<R extends Sent>(call: (api: RepositoryClient) => Promise<R>): Promise<ApiResponse<NonNullable<R["data"]>>> {
    let result: R;
    try {
      result = await call(this.http);
    } catch (err) {
      // A proxy's HTML page or similar on a 2xx: not the service we expect.
      if (err instanceof SyntaxError) {
        await this.requireRepositoryService("certain", "it answered with a body that is not JSON");
        throw new CliError(`The server at ${this.baseUrl} sent a response that is not JSON. Is --server right?`);
      }
      throw new CliError(`Cannot reach the server at ${this.baseUrl}: ${networkReason(err, this.timeoutMs)}`);
    }
    const { response } = result;
    const suspicion = suspicionOf(response);
    if (suspicion)
      await this.requireRepositoryService(suspicion, `it answered ${response.status} to ${new URL(response.url || this.baseUrl).pathname}`);
    const ok = response.status >= 200 && response.status < 300;
    return {
      status: response.status,
      headers: response.headers,
      body: ok ? (result.data as NonNullable<R["data"]>) : undefined,
      // openapi-fetch hands a non-JSON error body over as text: no problem to show then.
      problem: !ok && result.error && typeof result.error === "object" ? (result.error as Problem) : undefined,
    };
  }

  /** Throws, saying what the server is, when an answer and the server's document show it is not a repository service. */
  private async requireRepositoryService(suspicion: Suspicion, answered: string): Promise<void> {
    this.kind ??= identifyServer(this.baseUrl, this.timeoutMs);
    const error = notARepositoryService(this.baseUrl, await this.kind, suspicion, answered);
    if (error) throw error;
  }
}

/** fetch() hides the socket error in `cause`; users want "connection refused", not "fetch failed". */
function networkReason(err: unknown, timeoutMs: number): string {
  if (err instanceof Error && (err.name === "TimeoutError" || err.name === "AbortError"))
    return `no answer within ${Math.round(timeoutMs / 1000)} s (timed out)`;
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

/** The `Authorization` header of a Bearer token, as openapi-fetch request options. */
export const bearer = (token: string) => ({ headers: { Authorization: `Bearer ${token}` } });
