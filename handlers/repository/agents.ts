/** Build agents: registration and revocation by a user; poll and result reports by the agent itself. */
import { randomUUID } from "node:crypto";
import { conflict, notFound } from "../../server/http/problem.ts";
import { userId } from "./auth.ts";
import type { RepositoryHandlers } from "./deps.ts";
import type { AgentPrincipal, Principal } from "./domain/tokens.ts";
import { toAgent, toBuild } from "./mappers.ts";

function agentOf(auth: Principal | undefined): AgentPrincipal {
  if (auth?.kind !== "agent") throw new Error("AgentAuth operation reached without an agent principal");
  return auth;
}

export const agentHandlers: Pick<RepositoryHandlers, "registerAgent" | "listAgents" | "revokeAgent" | "poll" | "reportResult"> = {
  async registerAgent({ auth, body }, { queries, tokens, clock }) {
    const row = { id: randomUUID(), owner_id: userId(auth), name: body.name, created_at: clock.now().toISOString(), last_seen_at: null, revoked_at: null };
    await queries.insertAgent(row);
    const { agentToken, expiresAt } = await tokens.issueAgentToken(row.id);
    return { status: 201, body: { agent: toAgent(row), agentToken, expiresAt } };
  },

  async listAgents({ auth, query }, { queries }) {
    const args = { page: query.page ?? 1, pageSize: query.pageSize ?? 20 };
    const { items, totalCount } = await queries.listAgents(userId(auth), args);
    return { status: 200, body: { items: items.map(toAgent), totalCount, ...args } };
  },

  async revokeAgent({ auth, params }, { queries, clock }) {
    if (!(await queries.revokeAgent(userId(auth), params.agentId, clock.now().toISOString()))) throw notFound("No such agent.");
    return { status: 204 };
  },

  async poll({ auth }, { queries, clock }) {
    const agent = agentOf(auth);
    const now = clock.now().toISOString();
    await queries.touchAgent(agent.agentId, now);
    const buildId = await queries.claimNextBuild(agent.ownerId, agent.agentId, now);
    if (!buildId) return { status: 204 };
    return { status: 200, body: toBuild((await queries.findBuild(buildId))!) };
  },

  async reportResult({ auth, params, body }, { queries, clock }) {
    const agent = agentOf(auth);
    const build = await queries.findBuild(params.buildId);
    if (!build || build.owner_id !== agent.ownerId) throw notFound("No such build.");
    if (!(await queries.finishBuild(build.id, agent.agentId, body.status, clock.now().toISOString()))) {
      throw conflict("This build is not running on this agent.");
    }
    return { status: 200, body: toBuild((await queries.findBuild(build.id))!) };
  },
};
