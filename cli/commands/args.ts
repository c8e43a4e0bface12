/** Reading checked options as the API takes them. */
import type { Context } from "../context.ts";

/**
 * `--page` and `--page-size` as the API's 1-based paging query. The parser checked both before the
 * command ran (`options.ts`), so a bad one was a usage error and no request was made.
 */
export function pageQuery(ctx: Context): { page?: number; pageSize?: number } {
  const { page, "page-size": pageSize } = ctx.options;
  return {
    ...(typeof page === "number" ? { page } : {}),
    ...(typeof pageSize === "number" ? { pageSize } : {}),
  };
}
