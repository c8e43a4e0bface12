/** Build agents: registration and revocation by a user; poll and result reports by the agent itself. HTTP in and out; the rules are in domain/agents.ts. */
import { userId, type RepositoryHandlers } from "./repository-handlers.ts";
import type { AgentPrincipal, Principal } from "./domain/tokens.ts";
import { toAgent, toBuild } from "./shared/mappers.ts";

function agentOf(auth: Principal | undefined): AgentPrincipal {
  if (auth?.kind !== "agent") throw new Error("AgentAuth operation reached without an agent principal");
  return auth;
}

export const agentHandlers: Pick<RepositoryHandlers, "registerAgent" | "listAgents" | "revokeAgent" | "poll" | "reportResult"> = {
  async registerAgent({ auth, body }, { agents }) {
    const { agent, agentToken, expiresAt } = await agents.register(userId(auth), body.name);
    return { status: 201, body: { agent: toAgent(agent), agentToken, expiresAt } };
  },

  async listAgents({ auth, query }, { agents }) {
    const args = { page: query.page ?? 1, pageSize: query.pageSize ?? 20 };
    const { items, totalCount } = await agents.list(userId(auth), args);
    return { status: 200, body: { items: items.map(toAgent), totalCount, ...args } };
  },

  async revokeAgent({ auth, params }, { agents }) {
    await agents.revoke(userId(auth), params.agentId);
    return { status: 204 };
  },

  async poll({ auth }, { agents }) {
    const build = await agents.poll(agentOf(auth));
    return build ? { status: 200, body: toBuild(build) } : { status: 204 };
  },

  async reportResult({ auth, params, body }, { agents }) {
    return { status: 200, body: toBuild(await agents.reportResult(agentOf(auth), params.buildId, body.status)) };
  },
};
