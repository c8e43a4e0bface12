/**
 * `rb agent register|list|revoke|poll|report`. Registration and management use the user's session;
 * poll and report use the stored agent token, a separate token system (seed §5.4).
 */
import { bearer } from "../api-client.ts";
import type { components } from "../../generated/sdk/types/repository.ts";
import type { StoredAgent } from "../config-store.ts";
import type { Context } from "../context.ts";
import { agentTokenRefused, CliError, problemError, UsageError } from "../errors.ts";
import { fields, json, pageNote, table } from "../output.ts";
import { pageQuery, requireArgs } from "./args.ts";

type AgentCreate = components["schemas"]["AgentCreate"];
type BuildResult = components["schemas"]["BuildResult"];

const RESULTS: readonly BuildResult["status"][] = ["succeeded", "failed"];

export async function register(ctx: Context): Promise<void> {
  const [name] = requireArgs(ctx, 1, "rb agent register <name>");
  const body: AgentCreate = { name: name! };
  const reg = await ctx.session.call((api, auth) => api.POST("/buildagent/register", { body, ...auth }));
  const agent: StoredAgent = {
    id: reg.agent.id,
    name: reg.agent.name,
    agentToken: reg.agentToken,
    expiresAt: reg.expiresAt,
    server: ctx.api.baseUrl,
  };
  let replaced: StoredAgent | undefined;
  await ctx.store.update((c) => {
    replaced = c.agent;
    return { ...c, agent };
  });
  // The token is shown only once by the server; it lives in the config file, never on the screen.
  if (ctx.json) return ctx.io.out(json({ agent: reg.agent, expiresAt: reg.expiresAt, configFile: ctx.store.path }));
  ctx.io.out(
    `Registered agent ${reg.agent.name} (${reg.agent.id}). Its token is stored in ${ctx.store.path} and expires at ${reg.expiresAt}.`,
  );
  if (replaced && replaced.id !== agent.id) {
    ctx.io.err(
      `Note: this replaces the stored agent ${replaced.name} (${replaced.id}), which stays registered; remove it with \`rb agent revoke ${replaced.id}\`.`,
    );
  }
}

export async function list(ctx: Context): Promise<void> {
  requireArgs(ctx, 0, "rb agent list");
  const page = await ctx.session.call((api, auth) => api.GET("/buildagent/agents", { params: { query: pageQuery(ctx) }, ...auth }));
  if (ctx.json) return ctx.io.out(json(page));
  if (page.items.length === 0) return ctx.io.out("No agents registered. Register one with `rb agent register <name>`.");
  const local = ctx.store.load().agent?.id;
  ctx.io.out(
    table(
      ["ID", "NAME", "REGISTERED", "LAST SEEN"],
      page.items.map((a) => [a.id, a.id === local ? `${a.name} (this machine)` : a.name, a.createdAt, a.lastSeenAt ?? "never"]),
    ),
  );
  const note = pageNote(page, page.items.length);
  if (note) ctx.io.out(note);
}

export async function revoke(ctx: Context): Promise<void> {
  const [id] = requireArgs(ctx, 1, "rb agent revoke <id>");
  await ctx.session.call((api, auth) => api.DELETE("/buildagent/agents/{agentId}", { params: { path: { agentId: id! } }, ...auth }));
  // A revoked token is useless; keeping it would only make `agent poll` fail later.
  await ctx.store.update((c) => (c.agent?.id === id ? { ...c, agent: undefined } : c));
  ctx.io.out(ctx.json ? json({ revoked: id }) : `Revoked agent ${id}. Its token no longer works; a build it was running is queued again.`);
}

export async function poll(ctx: Context): Promise<void> {
  requireArgs(ctx, 0, "rb agent poll");
  const agent = storedAgent(ctx);
  const res = await ctx.api.send((api) => api.POST("/buildagent/poll", bearer(agent.agentToken)));
  if (res.status === 401) throw agentTokenRefused();
  if (res.status === 204) return ctx.io.out(ctx.json ? json(null) : "No build queued.");
  if (res.status !== 200 || !res.body) throw problemError(res.status, res.problem);
  const b = res.body;
  if (ctx.json) return ctx.io.out(json(b));
  ctx.io.out(
    fields([
      ["Build", b.id],
      ["Repository", `${b.repositoryName} (${b.repositoryId})`],
      ["Ref", b.ref],
      ["Status", b.status],
      ["Queued", b.createdAt],
      ["Started", b.startedAt],
    ]),
  );
}

export async function report(ctx: Context): Promise<void> {
  const usage = "rb agent report <buildId> succeeded|failed";
  const [buildId, status] = requireArgs(ctx, 2, usage);
  if (!RESULTS.includes(status as BuildResult["status"]))
    throw new UsageError(`The result must be "succeeded" or "failed", not "${status}". Usage: ${usage}`);
  const agent = storedAgent(ctx);
  const body: BuildResult = { status: status as BuildResult["status"] };
  const res = await ctx.api.send((api) =>
    api.POST("/buildagent/builds/{buildId}/result", { params: { path: { buildId: buildId! } }, body, ...bearer(agent.agentToken) }),
  );
  if (res.status === 401) throw agentTokenRefused();
  if (res.status !== 200 || !res.body) throw problemError(res.status, res.problem);
  ctx.io.out(ctx.json ? json(res.body) : `Build ${res.body.id} marked ${res.body.status}.`);
}

/** The agent registered from this machine, if it belongs to the server in use. */
function storedAgent(ctx: Context): StoredAgent {
  const agent = ctx.store.load().agent;
  if (!agent) throw new CliError("No agent is registered on this machine. Run `rb agent register <name>` first.");
  if (agent.server !== ctx.api.baseUrl) {
    throw new CliError(
      `The stored agent ${agent.name} belongs to ${agent.server}, not ${ctx.api.baseUrl}. Use --server ${agent.server}, or register an agent here.`,
    );
  }
  return agent;
}
