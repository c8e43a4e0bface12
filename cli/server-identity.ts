/**
 * Telling a wrong `--server` apart (X-CLI-5). rb speaks only the repository-and-build API. Another
 * service of the platform (identity, email) answers its requests with 404 "No such endpoint.", and
 * any other HTTP server with 404s, 405s or pages that are not JSON: read as they come, those say
 * nothing about the real mistake. So when an answer looks like that, the client asks the server once
 * for its OpenAPI document (`/openapi.json`, which every service of the platform serves) and, unless
 * the document is the repository API's, says what the server is instead.
 */
import type { paths } from "../generated/sdk/types/repository.ts";
import { CliError } from "./errors.ts";

/** Operations only the repository API has: a document declaring both is that API, whatever its title. */
const REPOSITORY_PATHS: readonly (keyof paths)[] = ["/auth/login", "/buildagent/poll"];

/**
 * How far an answer shows that the server is not a repository service. "certain": the repository
 * service never sends it to a request the contract allows (a body that is not JSON, 405, 501).
 * "possible": a JSON 404, which the repository sends too, for a repository or build that is not there.
 * A 5xx page is neither: a proxy whose upstream is down sends one too.
 */
export type Suspicion = "certain" | "possible";

export function suspicionOf(response: Response): Suspicion | undefined {
  const { status } = response;
  if (status === 204 || (status >= 500 && status !== 501)) return undefined;
  if (status === 405 || status === 501 || !/\bjson\b/i.test(response.headers.get("content-type") ?? "")) return "certain";
  return status === 404 ? "possible" : undefined;
}

/** What the server's OpenAPI document says it is: the repository API, another API, or nothing readable. */
export type ServerKind = { kind: "repository" } | { kind: "other"; title?: string } | { kind: "unknown" };

export async function identifyServer(baseUrl: string, timeoutMs: number): Promise<ServerKind> {
  let document: unknown;
  try {
    const res = await fetch(`${baseUrl}/openapi.json`, {
      headers: { accept: "application/json" },
      redirect: "error",
      signal: AbortSignal.timeout(timeoutMs),
    });
    if (!res.ok) return { kind: "unknown" };
    document = await res.json();
  } catch {
    return { kind: "unknown" };
  }
  if (typeof document !== "object" || document === null) return { kind: "unknown" };
  const doc = document as { info?: { title?: unknown }; paths?: unknown };
  const declared = typeof doc.paths === "object" && doc.paths !== null ? Object.keys(doc.paths) : [];
  if (REPOSITORY_PATHS.every((p) => declared.includes(p))) return { kind: "repository" };
  return { kind: "other", ...(typeof doc.info?.title === "string" ? { title: doc.info.title } : {}) };
}

/**
 * The error to report, or undefined when the answer stands as it is: the server is the repository
 * service, or it might be (a JSON 404 from a server whose document cannot be read, e.g. a proxy that
 * forwards only the API's paths).
 */
export function notARepositoryService(baseUrl: string, server: ServerKind, suspicion: Suspicion, answered: string): CliError | undefined {
  if (server.kind === "repository" || (server.kind === "unknown" && suspicion === "possible")) return undefined;
  const what =
    server.kind === "unknown"
      ? `${answered}, and it serves no OpenAPI document at ${baseUrl}/openapi.json`
      : server.title
        ? `its API is "${server.title}"`
        : `${answered}, and its OpenAPI document is not the repository API's`;
  return new CliError(`The server at ${baseUrl} is not a repository-and-build service: ${what}. Check --server (or RB_SERVER).`);
}
