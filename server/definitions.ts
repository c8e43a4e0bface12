/** Paths of the generated OpenAPI documents the services route by. */
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");

/** `generated/openapi/<document>.yaml`: each service names its own document. */
export const definitionPath = (document: string): string => join(root, "generated/openapi", `${document}.yaml`);
