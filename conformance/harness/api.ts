/**
 * Typed clients of the three services for the suite: openapi-fetch over the SDK documents' types
 * (generated/sdk/types, as cli/api-client.ts uses them), so every path, parameter and body a
 * fixture or a test sends is checked against the contract when the suite type-checks. A request
 * the contract forbids does not compile here; tests that must send one use `request` (http.ts).
 *
 * They go through the global `fetch` (or the `fetch` given, e.g. client-address.ts `fetchFrom`),
 * so the contract recorder (contract-recorder.ts) sees their answers as it sees any other.
 * Redirects are never followed: a 3xx is an answer the test reads, as with `request`.
 */
import createClient, { type Client } from "openapi-fetch";
import type { paths as EmailPaths } from "../../generated/sdk/types/email.ts";
import type { paths as IdentityPaths } from "../../generated/sdk/types/identity.ts";
import type { paths as RepositoryPaths } from "../../generated/sdk/types/repository.ts";

export type IdentityApi = Client<IdentityPaths>;
export type RepositoryApi = Client<RepositoryPaths>;
export type EmailApi = Client<EmailPaths>;

export interface ApiOptions {
  /** Sent as `Authorization: Bearer …` on every call (an access token, or the email service's API key). */
  token?: string;
  /** How requests go out; the global `fetch` by default. */
  fetch?: typeof fetch;
}

/** A service's URL, or anything that carries it (a target, a world). */
type Where = string | { url: string };

function client<Paths extends {}>(where: Where, options: ApiOptions): Client<Paths> {
  const send = options.fetch ?? fetch;
  return createClient<Paths>({
    baseUrl: typeof where === "string" ? where : where.url,
    ...(options.token === undefined ? {} : { headers: { authorization: `Bearer ${options.token}` } }),
    // The request is taken apart so any fetch (the undici package's too) can send it, without following redirects.
    fetch: async (req: Request) =>
      send(req.url, {
        method: req.method,
        headers: req.headers,
        ...(req.body ? { body: await req.arrayBuffer() } : {}),
        redirect: "manual",
      }),
  });
}

export const identityApi = (where: Where, options: ApiOptions = {}): IdentityApi => client<IdentityPaths>(where, options);
export const repositoryApi = (where: Where, options: ApiOptions = {}): RepositoryApi => client<RepositoryPaths>(where, options);
export const emailApi = (where: Where, options: ApiOptions = {}): EmailApi => client<EmailPaths>(where, options);

/** What an openapi-fetch call resolves to. */
interface Sent<D> {
  data?: D;
  error?: unknown;
  response: Response;
}

/**
 * For fixtures: the body of an answer that must have `status` (a set-up that fails says where
 * and why, instead of a test failing later on an undefined field).
 */
export async function expectStatus<D>(sent: Promise<Sent<D>>, status: number, what: string): Promise<NonNullable<D>> {
  const { data, error, response } = await sent;
  if (response.status !== status)
    throw new Error(`${what}: ${response.status} ${typeof error === "string" ? error : JSON.stringify(error ?? data)}`);
  return data as NonNullable<D>;
}

/** The `Authorization` header of one call made with another token than the client's. */
export const bearer = (token: string) => ({ headers: { authorization: `Bearer ${token}` } });
