/** Build agents: registration and revocation by a user; poll and result reports by the agent itself. HTTP in and out; the rules are in domain/agents.ts. */
import { paging } from "../../server/http/handler-inputs.ts";
import { agentOf, userId, type RepositoryHandlers } from "./repository-handlers.ts";
import { toAgent, toBuild } from "./shared/mappers.ts";

export const agentHandlers: Pick<RepositoryHandlers, "registerAgent" | "listAgents" | "revokeAgent" | "poll" | "reportResult"> = {
  async registerAgent({ auth, body }, { agents }) {
    const { agent, agentToken, expiresAt } = await agents.register(userId(auth), body.name);
    return { status: 201, body: { agent: toAgent(agent), agentToken, expiresAt } };
  },

  async listAgents({ auth, query }, { agents }) {
    const args = paging(query);
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
