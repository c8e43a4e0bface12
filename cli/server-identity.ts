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
 * An answer the repository service never gives to a request the contract allows: no such route, or
 * a body that is not JSON. A 5xx page is left alone: a proxy whose upstream is down sends one too.
 */
export function looksForeign(response: Response): boolean {
  if (response.status === 404 || response.status === 405 || response.status === 501) return true;
  if (response.status === 204 || response.status >= 500) return false;
  return !/\bjson\b/i.test(response.headers.get("content-type") ?? "");
}

export type ServerKind = { repository: true } | { repository: false; title?: string };

/** What the server at `baseUrl` says it is, from its OpenAPI document. */
export async function identifyServer(baseUrl: string, timeoutMs: number): Promise<ServerKind> {
  let document: unknown;
  try {
    const res = await fetch(`${baseUrl}/openapi.json`, {
      headers: { accept: "application/json" },
      redirect: "error",
      signal: AbortSignal.timeout(timeoutMs),
    });
    if (!res.ok) return { repository: false };
    document = await res.json();
  } catch {
    return { repository: false };
  }
  const doc = (typeof document === "object" && document !== null ? document : {}) as { info?: { title?: unknown }; paths?: unknown };
  const declared = typeof doc.paths === "object" && doc.paths !== null ? Object.keys(doc.paths) : [];
  if (REPOSITORY_PATHS.every((p) => declared.includes(p))) return { repository: true };
  return { repository: false, ...(typeof doc.info?.title === "string" ? { title: doc.info.title } : {}) };
}

/** "The server at … is not a repository-and-build service", with what it is or what it answered. */
export function notARepositoryService(baseUrl: string, kind: { title?: string }, answered: string): CliError {
  const what = kind.title ? `its API is "${kind.title}"` : `${answered}, and it serves no OpenAPI document at ${baseUrl}/openapi.json`;
  return new CliError(`The server at ${baseUrl} is not a repository-and-build service: ${what}. Check --server (or RB_SERVER).`);
}
