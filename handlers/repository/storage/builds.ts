/**
 * The builds store: builds queued for a repository, claimed by an agent and finished by it. The
 * interface and its knex implementation; postgres/builds.ts replaces the claim so that concurrent
 * pollers each take a different build, and storage/index.ts picks one.
 */
import type { Knex } from "knex";
import { pageNewestFirst } from "../../../server/storage/db.ts";
import type { Page, PageArgs } from "./repositories.ts";
import { type BuildRow, builds, repositories } from "./schema.ts";

/** A build as it is read: with its repository's name. */
export interface Build extends BuildRow {
  repository_name: string;
}

export interface BuildStore {
  insert(row: BuildRow): Promise<void>;
  find(id: string): Promise<Build | undefined>;
  /** One page of the repository's builds, newest first, and how many there are. */
  list(repositoryId: string, args: PageArgs): Promise<Page<Build>>;
  /**
   * Moves the owner's oldest queued build to `running` for this agent and returns its id, or
   * undefined when none is queued (or a concurrent poller took it). The conditional UPDATE on the
   * status decides: one build is never claimed twice.
   */
  claimNext(ownerId: string, agentId: string, at: string): Promise<string | undefined>;
  /** Finishes the build the agent is running; false when it is not running for this agent. */
  finish(id: string, agentId: string, status: "succeeded" | "failed", at: string): Promise<boolean>;
}

/** The claim's transaction, given how to read the next queued build (PostgreSQL locks it, skipping locked ones). */
export const claimNextBuild =
  (db: Knex, next: (query: Knex.QueryBuilder) => Knex.QueryBuilder): BuildStore["claimNext"] =>
  (ownerId, agentId, at) =>
    db.transaction(async (trx) => {
      const query = trx(builds.name)
        .where({ owner_id: ownerId, status: "queued" })
        .orderBy([{ column: "created_at" }, { column: "id" }])
        .first("id");
      const row = (await next(query)) as { id: string } | undefined;
      if (!row) return undefined;
      const won = await trx(builds.name)
        .where({ id: row.id, status: "queued" })
        .update({ status: "running", agent_id: agentId, started_at: at });
      return won === 1 ? row.id : undefined;
    });

export function knexBuilds(db: Knex): BuildStore {
  const withName = () =>
    db(`${builds.name}`)
      .join(repositories.name, `${repositories.name}.id`, `${builds.name}.repository_id`)
      .select(`${builds.name}.*`, `${repositories.name}.name as repository_name`);
  return {
    async insert(row) {
      await db(builds.name).insert(row);
    },
    find: (id) => withName().where(`${builds.name}.id`, id).first() as Promise<Build | undefined>,
    list: (repositoryId, { page, pageSize }) =>
      pageNewestFirst<Build>(
        withName().where(`${builds.name}.repository_id`, repositoryId),
        page,
        pageSize,
        "builds.id",
        "builds.created_at",
      ),
    // SQLite's one connection runs one transaction at a time: the status condition makes the UPDATE a claim.
    claimNext: claimNextBuild(db, (query) => query),
    finish: async (id, agentId, status, at) =>
      (await db(builds.name).where({ id, agent_id: agentId, status: "running" }).update({ status, finished_at: at })) === 1,
  };
}
