/**
 * The admin API client: openapi-fetch over the types generated from the contract
 * (generated/sdk/types/identity.ts: the client's view of it, where a field with a default may be
 * left out), so every path, parameter and body is checked against the spec at compile time. Each request carries the tab's access token; a 401 (or no token left) sends the
 * admin back to sign in.
 */
import createClient from "openapi-fetch";
import type { components, paths } from "../../generated/sdk/types/identity.ts";
import { currentToken } from "./session.ts";
import { signInAgain } from "./sign-in.ts";

export type Schemas = components["schemas"];
type Problem = Partial<Schemas["Problem"]> & { error_description?: string };

/** A failed API call: its status and the problem document the API answered with. */
export class ApiError extends Error {
  readonly status: number;
  readonly problem: Problem;

  constructor(status: number, problem: Problem) {
    super(problem.detail || problem.error_description || `HTTP ${status}`);
    this.status = status;
    this.problem = problem;
  }
}

export const client = createClient<paths>({ baseUrl: location.origin });

client.use({
  onRequest({ request }) {
    const token = currentToken();
    if (!token) {
      signInAgain("Your session ended. Please sign in again.");
      throw new ApiError(401, { detail: "signed out" });
    }
    request.headers.set("authorization", `Bearer ${token}`);
    return request;
  },
});

/**
 * The data of a call's answer, or an ApiError (after asking to sign in again on a 401). Used as
 * `ok(await client.GET(...))`, so the data keeps the type the contract gives it.
 */
export function ok<T>(result: { data?: T; error?: unknown; response: Response }): T {
  const { response } = result;
  if (response.status === 401) {
    signInAgain("Your session expired. Please sign in again.");
    throw new ApiError(401, (result.error ?? {}) as Problem);
  }
  if (!response.ok) throw new ApiError(response.status, (result.error ?? {}) as Problem);
  return result.data as T;
}
