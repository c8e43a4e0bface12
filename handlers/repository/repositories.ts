/** The /repository resource: the signed-in user's repositories and their builds. */
import { randomUUID } from "node:crypto";
import { conflict, notFound } from "../../server/http/problem.ts";
import { userId } from "./auth.ts";
import type { RepositoryHandlers } from "./deps.ts";
import { toBuild, toRepository } from "./mappers.ts";

export const repositoryHandlers: Pick<
  RepositoryHandlers,
  "listRepositories" | "createRepository" | "getRepository" | "queueBuild" | "listBuilds"
> = {
  async listRepositories({ auth, query }, { queries }) {
    const args = { page: query.page ?? 1, pageSize: query.pageSize ?? 20 };
    const { items, totalCount } = await queries.listRepositories(userId(auth), args);
    return { status: 200, body: { items: items.map(toRepository), totalCount, ...args } };
  },

  async createRepository({ auth, body }, { queries, clock }) {
    const ownerId = userId(auth);
    if (await queries.findRepositoryByName(ownerId, body.name)) throw conflict(`You already have a repository named ${body.name}.`);
    const row = {
      id: randomUUID(),
      owner_id: ownerId,
      name: body.name,
      description: body.description ?? "",
      default_branch: body.defaultBranch ?? "main",
      created_at: clock.now().toISOString(),
    };
    try {
      await queries.insertRepository(row);
    } catch (err) {
      // Two concurrent creates of one name: the unique index decides, the loser gets the same 409.
      if (/unique|duplicate/i.test(String((err as Error).message))) throw conflict(`You already have a repository named ${body.name}.`);
      throw err;
    }
    return { status: 201, body: toRepository(row) };
  },

  async getRepository({ auth, params }, { queries }) {
    const row = await queries.findRepository(userId(auth), params.repositoryId);
    if (!row) throw notFound("No such repository.");
    return { status: 200, body: toRepository(row) };
  },

  async queueBuild({ auth, params, body }, { queries, clock }) {
    const ownerId = userId(auth);
    const repo = await queries.findRepository(ownerId, params.repositoryId);
    if (!repo) throw notFound("No such repository.");
    const id = randomUUID();
    await queries.insertBuild({
      id,
      repository_id: repo.id,
      owner_id: ownerId,
      ref: body?.ref ?? repo.default_branch,
      status: "queued",
      agent_id: null,
      created_at: clock.now().toISOString(),
      started_at: null,
      finished_at: null,
    });
    return { status: 201, body: toBuild((await queries.findBuild(id))!) };
  },

  async listBuilds({ auth, params, query }, { queries }) {
    const repo = await queries.findRepository(userId(auth), params.repositoryId);
    if (!repo) throw notFound("No such repository.");
    const args = { page: query.page ?? 1, pageSize: query.pageSize ?? 20 };
    const { items, totalCount } = await queries.listBuilds(repo.id, args);
    return { status: 200, body: { items: items.map(toBuild), totalCount, ...args } };
  },
};
