/** Small argument checks shared by commands. */
import type { Context } from "../context.ts";
import { UsageError } from "../errors.ts";

/** Exactly `count` positional arguments, or a usage error naming the expected form. */
export function requireArgs(ctx: Context, count: number, usage: string): string[] {
  if (ctx.args.length < count) throw new UsageError(`Missing argument. Usage: ${usage}`);
  if (ctx.args.length > count) throw new UsageError(`Unexpected argument "${ctx.args[count]}". Usage: ${usage}`);
  return ctx.args;
}

/** `--page` and `--page-size` as the API's 1-based paging query. */
export function pageQuery(ctx: Context): { page?: number; pageSize?: number } {
  const read = (name: string, max: number) => {
    const raw = ctx.options[name];
    if (raw === undefined) return undefined;
    const n = Number(raw);
    if (typeof raw !== "string" || !Number.isInteger(n) || n < 1 || n > max)
      throw new UsageError(`--${name} must be a whole number from 1 to ${max}.`);
    return n;
  };
  return { page: read("page", 1_000_000), pageSize: read("page-size", 100) };
}
