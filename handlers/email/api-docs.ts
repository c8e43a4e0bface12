/** Handlers of the API reference (X-API-15): `/docs`, its script, `/openapi.yaml`, `/openapi.json`. */
import { definitionPath } from "../../server/definitions.ts";
import { apiReference } from "../../server/http/api-docs.ts";
import type { EmailHandlers } from "./email-handlers.ts";

const reference = apiReference({ title: "Email Service", definitionPath: definitionPath("email") });

export const apiDocsHandlers: Pick<EmailHandlers, "apiReference" | "apiReferenceScript" | "openapiYaml" | "openapiJson"> = {
  apiReference: async () => reference.page(),
  apiReferenceScript: async () => reference.script(),
  openapiYaml: async () => reference.yaml(),
  openapiJson: async () => reference.json(),
};
