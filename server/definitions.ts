/** Paths of the generated OpenAPI documents the services route by. */
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");

export const definitionPath = (file: "identity" | "repository" | "email"): string => join(root, "generated/openapi", `${file}.yaml`);
