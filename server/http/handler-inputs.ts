/**
 * What the handlers of every service read from a request the same way: the page a list operation
 * asks for, with the contract's defaults, and the principal its security scheme admitted.
 */

/** `page` and `pageSize` when the query leaves them out (spec/shared/pagination.tsp). */
export const DEFAULT_PAGE = 1;
export const DEFAULT_PAGE_SIZE = 20;

/** The page a list operation's query asks for; the contract has already checked the bounds. */
export const paging = (query: { page?: number; pageSize?: number }): { page: number; pageSize: number } => ({
  page: query.page ?? DEFAULT_PAGE,
  pageSize: query.pageSize ?? DEFAULT_PAGE_SIZE,
});

/**
 * The principal an operation's security scheme admitted, of `kind` when the service has several.
 * openapi-backend refuses a request before its handler runs when no scheme admits it, so a handler
 * that finds none (or another kind) is a bug of the wiring: an Error (a 500), never a client's 401.
 */
export function admitted<P extends object>(auth: P | undefined): P;
export function admitted<P extends { kind: string }, K extends P["kind"]>(auth: P | undefined, kind: K): Extract<P, { kind: K }>;
export function admitted<P extends { kind?: string }>(auth: P | undefined, kind?: string): P {
  if (auth === undefined || (kind !== undefined && auth.kind !== kind))
    throw new Error(`an operation reached its handler without ${kind ? `a ${kind}` : "a"} principal`);
  return auth;
}
