/** `rb repo list|create|show`. */
import type { components } from "../../generated/sdk/types/repository.ts";
import type { Context } from "../context.ts";
import { fields, json, pageNote, table } from "../output.ts";
import { pageQuery } from "./args.ts";
import { findRepository } from "./repository-ref.ts";

type RepositoryCreate = components["schemas"]["RepositoryCreate"];

export async function list(ctx: Context): Promise<void> {
  const query = pageQuery(ctx);
  const page = await ctx.session.call((api, auth) => api.GET("/repository", { params: { query }, ...auth }));
  if (ctx.json) return ctx.io.out(json(page));
  if (page.items.length === 0)
    return ctx.io.out(
      page.totalCount === 0 ? "No repositories yet. Create one with `rb repo create <name>`." : "No repositories on this page.",
    );
  ctx.io.out(
    table(
      ["ID", "NAME", "BRANCH", "DESCRIPTION"],
      page.items.map((r) => [r.id, r.name, r.defaultBranch, r.description]),
    ),
  );
  const note = pageNote(page, page.items.length);
  if (note) ctx.io.out(note);
}

export async function create(ctx: Context): Promise<void> {
  const [name] = ctx.args;
  const body: RepositoryCreate = { name: name! };
  if (typeof ctx.options.description === "string") body.description = ctx.options.description;
  if (typeof ctx.options["default-branch"] === "string") body.defaultBranch = ctx.options["default-branch"];
  const repo = await ctx.session.call((api, auth) => api.POST("/repository", { body, ...auth }));
  if (ctx.json) return ctx.io.out(json(repo));
  ctx.io.out(`Created repository ${repo.name} (${repo.id}).`);
}

export async function show(ctx: Context): Promise<void> {
  const [ref] = ctx.args;
  const repo = await findRepository(ctx, ref!);
  if (ctx.json) return ctx.io.out(json(repo));
  ctx.io.out(
    fields([
      ["ID", repo.id],
      ["Name", repo.name],
      ["Description", repo.description],
      ["Default branch", repo.defaultBranch],
      ["Created", repo.createdAt],
    ]),
  );
}
