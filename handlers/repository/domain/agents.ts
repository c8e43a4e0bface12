/**
 * Build agents: a user registers and revokes their own; an agent polls for the oldest queued build
 * of its owner and reports how it ended. A build is only finished by the agent running it.
 */
import { randomUUID } from "node:crypto";
import type { Clock } from "../../../server/clock.ts";
import { conflict, notFound } from "../../../server/domain/errors.ts";
import type { AgentStore } from "../storage/agents.ts";
import type { Build, BuildStore } from "../storage/builds.ts";
import type { PageArgs } from "../storage/repositories.ts";
import type { AgentRow } from "../storage/schema.ts";
import type { AgentPrincipal, TokenService } from "./tokens.ts";

export function createAgents(storage: { agents: AgentStore; builds: BuildStore }, tokens: TokenService, clock: Clock) {
  const { agents, builds } = storage;
  return {
    /** Registers an agent and issues its token. */
    async register(ownerId: string, name: string): Promise<{ agent: AgentRow; agentToken: string; expiresAt: string }> {
      const agent: AgentRow = {
        id: randomUUID(),
        owner_id: ownerId,
        name,
        created_at: clock.now().toISOString(),
        last_seen_at: null,
        revoked_at: null,
      };
      await agents.insert(agent);
      return { agent, ...(await tokens.issueAgentToken(agent.id)) };
    },

    list: (ownerId: string, args: PageArgs) => agents.list(ownerId, args),

    /** Revokes the owner's agent; the build it was running goes back to the queue. */
    async revoke(ownerId: string, agentId: string): Promise<void> {
      if (!(await agents.revoke(ownerId, agentId, clock.now().toISOString()))) throw notFound("No such agent.");
    },

    /** The build the agent now runs, claimed from its owner's queue, or undefined when none is queued. */
    async poll(agent: AgentPrincipal): Promise<Build | undefined> {
      const now = clock.now().toISOString();
      await agents.touch(agent.agentId, now);
      const buildId = await builds.claimNext(agent.ownerId, agent.agentId, now);
      return buildId ? (await builds.find(buildId))! : undefined;
    },

    /** Records how the agent's running build ended. */
    async reportResult(agent: AgentPrincipal, buildId: string, status: "succeeded" | "failed"): Promise<Build> {
      const build = await builds.find(buildId);
      if (!build || build.owner_id !== agent.ownerId) throw notFound("No such build.");
      if (!(await builds.finish(build.id, agent.agentId, status, clock.now().toISOString()))) {
        throw conflict("This build is not running on this agent.");
      }
      return (await builds.find(build.id))!;
    },
  };
}

export type Agents = ReturnType<typeof createAgents>;
