/** Storage rows → response bodies of the generated types. */
import type { components } from "../../../generated/types/repository.ts";
import type { Build } from "../storage/builds.ts";
import type { AgentRow, RepositoryRow } from "../storage/schema.ts";

type Schemas = components["schemas"];

export const toRepository = (r: RepositoryRow): Schemas["Repository"] => ({
  id: r.id,
  name: r.name,
  description: r.description,
  defaultBranch: r.default_branch,
  createdAt: r.created_at,
});

export const toBuild = (b: Build): Schemas["Build"] => ({
  id: b.id,
  repositoryId: b.repository_id,
  repositoryName: b.repository_name ?? "",
  ref: b.ref,
  status: b.status,
  ...(b.agent_id ? { agentId: b.agent_id } : {}),
  createdAt: b.created_at,
  ...(b.started_at ? { startedAt: b.started_at } : {}),
  ...(b.finished_at ? { finishedAt: b.finished_at } : {}),
});

export const toAgent = (a: AgentRow): Schemas["Agent"] => ({
  id: a.id,
  name: a.name,
  createdAt: a.created_at,
  ...(a.last_seen_at ? { lastSeenAt: a.last_seen_at } : {}),
});
