/**
 * `rb agent register|list|revoke|poll|report`. Registration and management use the user's session;
 * poll and report use the agent's token, a separate token system (seed §5.4): `RB_AGENT_TOKEN`, else
 * the agent `rb agent register` stored (credentials.ts).
 */
import { bearer } from "../api-client.ts";
import type { components } from "../../generated/sdk/types/repository.ts";
import type { StoredAgent } from "../config-store.ts";
import type { Context } from "../context.ts";
import { AGENT_TOKEN_VARIABLE, agentCredential } from "../credentials.ts";
import { agentTokenRefused, CliError, problemError } from "../errors.ts";
import { fields, json, pageNote, table } from "../output.ts";
import { pageQuery } from "./args.ts";

type AgentCreate = components["schemas"]["AgentCreate"];
type BuildResult = components["schemas"]["BuildResult"];

/** The results `rb agent report` takes (the parser checks the argument against this list). */
export const BUILD_RESULTS: readonly BuildResult["status"][] = ["succeeded", "failed"];

export async function register(ctx: Context): Promise<void> {
  const [name] = ctx.args;
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
  if (ctx.env[AGENT_TOKEN_VARIABLE])
    ctx.io.err(`Note: ${AGENT_TOKEN_VARIABLE} is set, so \`rb agent poll\` and \`rb agent report\` send it, not the agent stored here.`);
}

export async function list(ctx: Context): Promise<void> {
  const query = pageQuery(ctx);
  const page = await ctx.session.call((api, auth) => api.GET("/buildagent/agents", { params: { query }, ...auth }));
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
  const [id] = ctx.args;
  await ctx.session.call((api, auth) => api.DELETE("/buildagent/agents/{agentId}", { params: { path: { agentId: id! } }, ...auth }));
  // A revoked token is useless; keeping it would only make `agent poll` fail later.
  await ctx.store.update((c) => (c.agent?.id === id ? { ...c, agent: undefined } : c));
  ctx.io.out(ctx.json ? json({ revoked: id }) : `Revoked agent ${id}. Its token no longer works; a build it was running is queued again.`);
}

export async function poll(ctx: Context): Promise<void> {
  const agent = agentToken(ctx);
  const res = await ctx.api.send((api) => api.POST("/buildagent/poll", bearer(agent.token)));
  if (res.status === 401) throw agent.refused();
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
  // The parser checked the result against BUILD_RESULTS.
  const [buildId, status] = ctx.args as [string, BuildResult["status"]];
  const agent = agentToken(ctx);
  const body: BuildResult = { status };
  const res = await ctx.api.send((api) =>
    api.POST("/buildagent/builds/{buildId}/result", { params: { path: { buildId } }, body, ...bearer(agent.token) }),
  );
  if (res.status === 401) throw agent.refused();
  if (res.status !== 200 || !res.body) throw problemError(res.status, res.problem);
  ctx.io.out(ctx.json ? json(res.body) : `Build ${res.body.id} marked ${res.body.status}.`);
}

/** The agent token to send, and what to say when the server refuses it. */
function agentToken(ctx: Context): { token: string; refused: () => CliError } {
  const config = ctx.store.load();
  const credential = agentCredential(ctx.env, config, ctx.api.baseUrl);
  if (credential?.from === "environment") {
    const refused = () =>
      new CliError(
        `The agent token in ${AGENT_TOKEN_VARIABLE} was refused: it expired or the agent was revoked. Register the agent again and set its new token.`,
      );
    return { token: credential.agentToken, refused };
  }
  if (credential) return { token: credential.agent.agentToken, refused: agentTokenRefused };
  throw noAgentHere(ctx, config.agent);
}

/** No agent token for this server: none stored, or the stored one belongs to another server. */
function noAgentHere(ctx: Context, stored: StoredAgent | undefined): CliError {
  if (!stored)
    return new CliError(`No agent is registered on this machine. Run \`rb agent register <name>\` first, or set ${AGENT_TOKEN_VARIABLE}.`);
  return new CliError(
    `The stored agent ${stored.name} belongs to ${stored.server}, not ${ctx.api.baseUrl}. Use --server ${stored.server}, or register an agent here.`,
  );
}
