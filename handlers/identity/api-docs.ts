/** Handlers of the API reference (X-ID-DOC-1): `/docs`, its script, `/openapi.yaml`, `/openapi.json`. */
import { definitionPath } from "../../server/definitions.ts";
import { apiReference } from "../../server/http/api-docs.ts";
import type { IdentityHandlers } from "./identity-handlers.ts";

const reference = apiReference({ title: "Identity Service", definitionPath: definitionPath("identity") });

export const apiDocsHandlers: Pick<IdentityHandlers, "apiReference" | "apiReferenceScript" | "openapiYaml" | "openapiJson"> = {
  apiReference: async () => reference.page(),
  apiReferenceScript: async () => reference.script(),
  openapiYaml: async () => reference.yaml(),
  openapiJson: async () => reference.json(),
};
