/** The /repository resource: the signed-in user's repositories and their builds. HTTP in and out; the rules are in domain/repositories.ts. */
import { paging } from "../../server/http/handler-inputs.ts";
import { userId, type RepositoryHandlers } from "./repository-handlers.ts";
import { toBuild, toRepository } from "./shared/mappers.ts";

export const repositoryHandlers: Pick<
  RepositoryHandlers,
  "listRepositories" | "createRepository" | "getRepository" | "queueBuild" | "listBuilds"
> = {
  async listRepositories({ auth, query }, { repositories }) {
    const args = paging(query);
    const { items, totalCount } = await repositories.list(userId(auth), args);
    return { status: 200, body: { items: items.map(toRepository), totalCount, ...args } };
  },

  async createRepository({ auth, body }, { repositories }) {
    const row = await repositories.create(userId(auth), {
      name: body.name,
      ...(body.description === undefined ? {} : { description: body.description }),
      ...(body.defaultBranch === undefined ? {} : { defaultBranch: body.defaultBranch }),
    });
    return { status: 201, body: toRepository(row) };
  },

  async getRepository({ auth, params }, { repositories }) {
    return { status: 200, body: toRepository(await repositories.get(userId(auth), params.repositoryId)) };
  },

  async queueBuild({ auth, params, body }, { repositories }) {
    return { status: 201, body: toBuild(await repositories.queueBuild(userId(auth), params.repositoryId, body?.ref)) };
  },

  async listBuilds({ auth, params, query }, { repositories }) {
    const args = paging(query);
    const { items, totalCount } = await repositories.listBuilds(userId(auth), params.repositoryId, args);
    return { status: 200, body: { items: items.map(toBuild), totalCount, ...args } };
  },
};
