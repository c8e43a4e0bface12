/**
 * Set-up of the repository suite through the typed client (api.ts): repositories, queued builds and
 * build agents, each expected to be created (a set-up that fails says so where it happens).
 */
import type { components } from "../../generated/sdk/types/repository.ts";
import { expectStatus, type RepositoryApi } from "./api.ts";

/** A repository of the client's user; `more` sets the other fields (description, default branch). */
export const createRepository = (api: RepositoryApi, name: string, more: Partial<components["schemas"]["RepositoryCreate"]> = {}) =>
  expectStatus(api.POST("/repository", { body: { name, ...more } }), 201, "create repository");

/** A build queued on `repositoryId` (the default branch unless `ref` is given). */
export const queueBuild = (api: RepositoryApi, repositoryId: string, ref?: string) =>
  expectStatus(
    api.POST("/repository/{repositoryId}/builds", { params: { path: { repositoryId } }, body: ref === undefined ? {} : { ref } }),
    201,
    "queue build",
  );

/** A build agent of the client's user, with its agent token. */
export const registerAgent = (api: RepositoryApi, name: string) =>
  expectStatus(api.POST("/buildagent/register", { body: { name } }), 201, "register agent");
