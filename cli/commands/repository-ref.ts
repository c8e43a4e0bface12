/**
 * A repository on the command line, by id or by name (X-CLI-3). A UUID is an id and is used as is;
 * anything else is a name, looked up among the signed-in user's repositories. Names are unique per
 * owner and compared exactly (the server keeps `Web` and `web` apart), so at most one repository
 * matches; names differing only in case are offered as suggestions, never picked silently.
 */
import type { components } from "../../generated/sdk/types/repository.ts";
import type { Context } from "../context.ts";
import { CliError, UsageError } from "../errors.ts";

type Repository = components["schemas"]["Repository"];

/** The canonical 8-4-4-4-12 spelling; the name pattern allows it too, but an id wins. */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** `Repository.name`'s pattern in the contract. */
const NAME = /^[A-Za-z0-9._-]{1,100}$/;
/** The API's largest page: the fewest requests per lookup. */
const PAGE_SIZE = 100;

export const isRepositoryId = (ref: string) => UUID.test(ref);

/** The id of the repository `ref` names; for a UUID no request is made. */
export async function repositoryId(ctx: Context, ref: string): Promise<string> {
  return isRepositoryId(ref) ? ref : (await repositoryByName(ctx, ref)).id;
}

/** The repository `ref` names, read from the server. */
export async function findRepository(ctx: Context, ref: string): Promise<Repository> {
  if (isRepositoryId(ref))
    return ctx.session.call((api, auth) => api.GET("/repository/{repositoryId}", { params: { path: { repositoryId: ref } }, ...auth }));
  return repositoryByName(ctx, ref);
}

/**
 * The contract has no filter by name, so the list is read page by page until the name turns up.
 * It is ordered newest first and repositories are never deleted, so a repository created meanwhile
 * only pushes others to a later page: one is seen twice at worst, never skipped.
 */
async function repositoryByName(ctx: Context, name: string): Promise<Repository> {
  if (!NAME.test(name)) {
    throw new UsageError(
      `"${name}" is neither a repository id (a UUID) nor a repository name (letters, digits, ".", "_", "-"; 1-100 characters).`,
    );
  }
  const folded = name.toLowerCase();
  const nearby = new Set<string>();
  for (let page = 1, seen = 0; ; page++) {
    const list = await ctx.session.call((api, auth) =>
      api.GET("/repository", { params: { query: { page, pageSize: PAGE_SIZE } }, ...auth }),
    );
    const found = list.items.find((r) => r.name === name);
    if (found) return found;
    for (const r of list.items) if (r.name.toLowerCase() === folded) nearby.add(r.name);
    seen += list.items.length;
    if (list.items.length === 0 || seen >= list.totalCount) break;
  }
  const hint = nearby.size ? ` Did you mean ${[...nearby].map((n) => `"${n}"`).join(" or ")}?` : " `rb repo list` shows yours.";
  throw new CliError(`No repository named "${name}".${hint}`);
}
