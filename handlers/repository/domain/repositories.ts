/**
 * Repositories and their builds, as the signed-in user sees them: a name is unique per owner, a
 * build runs a ref of one of the owner's repositories (the default branch unless named), and
 * another user's repository is not found rather than forbidden (no way to probe names or ids).
 */
import { randomUUID } from "node:crypto";
import type { Clock } from "../../../server/clock.ts";
import { conflict, notFound } from "../../../server/domain/errors.ts";
import type { Build, BuildStore } from "../storage/builds.ts";
import type { PageArgs, RepositoryStore } from "../storage/repositories.ts";
import type { RepositoryRow } from "../storage/schema.ts";

export interface NewRepository {
  name: string;
  description?: string;
  defaultBranch?: string;
}

export function createRepositories(storage: { repositories: RepositoryStore; builds: BuildStore }, clock: Clock) {
  const { repositories, builds } = storage;
  const nameTaken = (name: string) => conflict(`You already have a repository named ${name}.`);

  async function owned(ownerId: string, repositoryId: string): Promise<RepositoryRow> {
    const repo = await repositories.find(ownerId, repositoryId);
    if (!repo) throw notFound("No such repository.");
    return repo;
  }

  return {
    list: (ownerId: string, args: PageArgs) => repositories.list(ownerId, args),

    /** Creates a repository; a name the owner already uses is a conflict, also when two creates race. */
    async create(ownerId: string, input: NewRepository): Promise<RepositoryRow> {
      if (await repositories.findByName(ownerId, input.name)) throw nameTaken(input.name);
      const row: RepositoryRow = {
        id: randomUUID(),
        owner_id: ownerId,
        name: input.name,
        description: input.description ?? "",
        default_branch: input.defaultBranch ?? "main",
        created_at: clock.now().toISOString(),
      };
      // Two concurrent creates of one name: the unique index decides, the loser gets the same conflict.
      if (!(await repositories.insert(row))) throw nameTaken(input.name);
      return row;
    },

    get: owned,

    /** Queues a build of `ref` (default: the repository's default branch). */
    async queueBuild(ownerId: string, repositoryId: string, ref: string | undefined): Promise<Build> {
      const repo = await owned(ownerId, repositoryId);
      const id = randomUUID();
      await builds.insert({
        id,
        repository_id: repo.id,
        owner_id: ownerId,
        ref: ref ?? repo.default_branch,
        status: "queued",
        agent_id: null,
        created_at: clock.now().toISOString(),
        started_at: null,
        finished_at: null,
      });
      return (await builds.find(id))!;
    },

    async listBuilds(ownerId: string, repositoryId: string, args: PageArgs) {
      const repo = await owned(ownerId, repositoryId);
      return builds.list(repo.id, args);
    },
  };
}

export type Repositories = ReturnType<typeof createRepositories>;
