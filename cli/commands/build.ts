/** `rb build queue|list`. */
import type { components } from "../../generated/sdk/types/repository.ts";
import type { Context } from "../context.ts";
import { json, pageNote, table } from "../output.ts";
import { pageQuery } from "./args.ts";
import { repositoryId } from "./repository-ref.ts";

type Build = components["schemas"]["Build"];
type BuildCreate = components["schemas"]["BuildCreate"];

export async function queue(ctx: Context): Promise<void> {
  const [repo] = ctx.args;
  const body: BuildCreate = typeof ctx.options.ref === "string" ? { ref: ctx.options.ref } : {};
  const id = await repositoryId(ctx, repo!);
  const build = await ctx.session.call((api, auth) =>
    api.POST("/repository/{repositoryId}/builds", { params: { path: { repositoryId: id } }, body, ...auth }),
  );
  if (ctx.json) return ctx.io.out(json(build));
  ctx.io.out(`Queued build ${build.id} of ${build.repositoryName} at ${build.ref}.`);
}

export async function list(ctx: Context): Promise<void> {
  const [repo] = ctx.args;
  const query = pageQuery(ctx);
  const id = await repositoryId(ctx, repo!);
  const page = await ctx.session.call((api, auth) =>
    api.GET("/repository/{repositoryId}/builds", { params: { path: { repositoryId: id }, query }, ...auth }),
  );
  if (ctx.json) return ctx.io.out(json(page));
  if (page.items.length === 0) return ctx.io.out(`No builds yet. Queue one with \`rb build queue ${repo}\`.`);
  ctx.io.out(table(["ID", "REF", "STATUS", "AGENT", "QUEUED"], page.items.map(buildRow)));
  const note = pageNote(page, page.items.length);
  if (note) ctx.io.out(note);
}

export const buildRow = (b: Build) => [b.id, b.ref, b.status, b.agentId ?? "-", b.createdAt];
