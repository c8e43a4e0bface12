/** Handlers of the API reference (X-API-15): `/docs`, its script, `/openapi.yaml`, `/openapi.json`. */
import { definitionPath } from "../../server/definitions.ts";
import { apiReference } from "../../server/http/api-docs.ts";
import type { RepositoryHandlers } from "./repository-handlers.ts";

const reference = apiReference({ title: "Repository and Build Service", definitionPath: definitionPath("repository") });

export const apiDocsHandlers: Pick<RepositoryHandlers, "apiReference" | "apiReferenceScript" | "openapiYaml" | "openapiJson"> = {
  apiReference: async () => reference.page(),
  apiReferenceScript: async () => reference.script(),
  openapiYaml: async () => reference.yaml(),
  openapiJson: async () => reference.json(),
};
