/** The agents store: each user's build agents; revoking one puts the build it was running back in the queue. */
import type { Knex } from "knex";
import { pageNewestFirst } from "../../../server/storage/db.ts";
import type { Page, PageArgs } from "./repositories.ts";
import { type AgentRow, agents, builds } from "./schema.ts";

export interface AgentStore {
  insert(row: AgentRow): Promise<void>;
  find(id: string): Promise<AgentRow | undefined>;
  /** One page of the owner's agents not revoked, newest first, and how many there are. */
  list(ownerId: string, args: PageArgs): Promise<Page<AgentRow>>;
  /** Records that the agent was seen at `at`. */
  touch(id: string, at: string): Promise<void>;
  /** Revokes the agent and puts the build it was running back in the queue, in one transaction; false when there was none to revoke. */
  revoke(ownerId: string, id: string, at: string): Promise<boolean>;
}

export function knexAgents(db: Knex): AgentStore {
  return {
    async insert(row) {
      await db(agents.name).insert(row);
    },
    find: (id) => db<AgentRow>(agents.name).where({ id }).first(),
    list: (ownerId, { page, pageSize }) =>
      pageNewestFirst<AgentRow>(db(agents.name).where({ owner_id: ownerId }).whereNull("revoked_at"), page, pageSize),
    async touch(id, at) {
      await db(agents.name).where({ id }).update({ last_seen_at: at });
    },
    revoke: (ownerId, id, at) =>
      db.transaction(async (trx) => {
        const n = await trx(agents.name).where({ id, owner_id: ownerId }).whereNull("revoked_at").update({ revoked_at: at });
        if (n === 1)
          await trx(builds.name).where({ agent_id: id, status: "running" }).update({ status: "queued", agent_id: null, started_at: null });
        return n === 1;
      }),
  };
}
