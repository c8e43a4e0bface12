/** Named queries of the repository-and-build service over knex. No HTTP, no rules: those live in domain/. */
import type { Database } from "../../../server/storage/db.ts";
import { countRows } from "../../../server/storage/db.ts";
import { isPostgres } from "../../../server/storage/dialect.ts";
import { isUniqueViolation } from "../../../server/storage/transaction.ts";
import { createRefreshTokenQueries } from "./refresh-tokens.ts";

export interface UserRow {
  id: string;
  email: string;
  password_hash: string;
  created_at: string;
}
export interface RepositoryRow {
  id: string;
  owner_id: string;
  name: string;
  description: string;
  default_branch: string;
  created_at: string;
}
export interface AgentRow {
  id: string;
  owner_id: string;
  name: string;
  created_at: string;
  last_seen_at: string | null;
  revoked_at: string | null;
}
export interface BuildRow {
  id: string;
  repository_id: string;
  owner_id: string;
  ref: string;
  status: "queued" | "running" | "succeeded" | "failed";
  agent_id: string | null;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  repository_name?: string;
}

export interface PageArgs {
  page: number;
  pageSize: number;
}

export function createRepositoryQueries(db: Database) {
  const page = async <T>(query: ReturnType<Database>, { page, pageSize }: PageArgs) => ({
    items: (await query
      .clone()
      .limit(pageSize)
      .offset((page - 1) * pageSize)) as T[],
    totalCount: await countRows(query),
  });
  const buildsWithName = () =>
    db("builds").join("repositories", "repositories.id", "builds.repository_id").select("builds.*", "repositories.name as repository_name");

  return {
    db,
    findUserByEmail: (email: string) => db<UserRow>("users").where({ email: email.toLowerCase() }).first(),
    findUserById: (id: string) => db<UserRow>("users").where({ id }).first(),
    insertUser: (row: UserRow) => db("users").insert({ ...row, email: row.email.toLowerCase() }),

    ...createRefreshTokenQueries(db),

    listRepositories: (ownerId: string, args: PageArgs) =>
      page<RepositoryRow>(
        db("repositories")
          .where({ owner_id: ownerId })
          .orderBy([
            { column: "created_at", order: "desc" },
            { column: "id", order: "desc" },
          ]),
        args,
      ),
    findRepository: (ownerId: string, id: string) => db<RepositoryRow>("repositories").where({ owner_id: ownerId, id }).first(),
    findRepositoryByName: (ownerId: string, name: string) => db<RepositoryRow>("repositories").where({ owner_id: ownerId, name }).first(),
    /** Inserts the repository; false when the owner already has one of this name (the unique index refused it). */
    insertRepository: async (row: RepositoryRow): Promise<boolean> => {
      try {
        await db("repositories").insert(row);
        return true;
      } catch (err) {
        if (isUniqueViolation(err)) return false;
        throw err;
      }
    },

    insertBuild: (row: BuildRow) => db("builds").insert(row),
    findBuild: (id: string) => buildsWithName().where("builds.id", id).first() as Promise<BuildRow | undefined>,
    listBuilds: (repositoryId: string, args: PageArgs) =>
      page<BuildRow>(
        buildsWithName()
          .where("builds.repository_id", repositoryId)
          .orderBy([
            { column: "builds.created_at", order: "desc" },
            { column: "builds.id", order: "desc" },
          ]),
        args,
      ),
    /**
     * Atomically moves the owner's oldest queued build to `running` for this agent. On PostgreSQL
     * `FOR UPDATE SKIP LOCKED` lets concurrent pollers each take a different build; on SQLite the
     * single connection serialises transactions, and the status condition makes the update a claim.
     */
    claimNextBuild: async (ownerId: string, agentId: string, at: string): Promise<string | undefined> =>
      db.transaction(async (trx) => {
        const next = trx("builds")
          .where({ owner_id: ownerId, status: "queued" })
          .orderBy([{ column: "created_at" }, { column: "id" }])
          .first("id");
        const row = (await (isPostgres(db) ? next.forUpdate().skipLocked() : next)) as { id: string } | undefined;
        if (!row) return undefined;
        const won = await trx("builds")
          .where({ id: row.id, status: "queued" })
          .update({ status: "running", agent_id: agentId, started_at: at });
        return won === 1 ? row.id : undefined;
      }),
    finishBuild: async (id: string, agentId: string, status: "succeeded" | "failed", at: string) =>
      (await db("builds").where({ id, agent_id: agentId, status: "running" }).update({ status, finished_at: at })) === 1,

    insertAgent: (row: AgentRow) => db("agents").insert(row),
    findAgent: (id: string) => db<AgentRow>("agents").where({ id }).first(),
    listAgents: (ownerId: string, args: PageArgs) =>
      page<AgentRow>(
        db("agents")
          .where({ owner_id: ownerId })
          .whereNull("revoked_at")
          .orderBy([
            { column: "created_at", order: "desc" },
            { column: "id", order: "desc" },
          ]),
        args,
      ),
    touchAgent: (id: string, at: string) => db("agents").where({ id }).update({ last_seen_at: at }),
    /** Revokes the agent and puts the build it was running back in the queue, in one transaction. */
    revokeAgent: async (ownerId: string, id: string, at: string) =>
      db.transaction(async (trx) => {
        const n = await trx("agents").where({ id, owner_id: ownerId }).whereNull("revoked_at").update({ revoked_at: at });
        if (n === 1)
          await trx("builds").where({ agent_id: id, status: "running" }).update({ status: "queued", agent_id: null, started_at: null });
        return n === 1;
      }),
  };
}

export type RepositoryQueries = ReturnType<typeof createRepositoryQueries>;
