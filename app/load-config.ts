/**
 * The whole configuration: the platform's section (server/config.ts) and each service's
 * (`handlers/<service>/config.ts`), read as one, so that one start names every bad variable.
 * The entry points call loadConfigOrExit; tests and tools call loadConfig with an environment.
 */
import type { ConfigSection } from "../server/config-schema.ts";
import { ConfigError, platformConfig, readConfig } from "../server/config.ts";
import { emailConfig } from "../handlers/email/config.ts";
import { identityConfig } from "../handlers/identity/config.ts";
import { repositoryConfig } from "../handlers/repository/config.ts";
import type { ServiceName } from "./services.ts";

/** Each service's section, by the service's name. */
export const SERVICE_CONFIG_SECTIONS = {
  identity: identityConfig,
  email: emailConfig,
  repository: repositoryConfig,
} as const satisfies Record<ServiceName, ConfigSection>;

/** Every section, in the order docs/configuration.md lists them. */
export const CONFIG_SECTIONS: readonly ConfigSection[] = [platformConfig, ...Object.values(SERVICE_CONFIG_SECTIONS)];

/** Reads and validates the environment; throws one ConfigError listing every bad variable. */
export function loadConfig(env: Readonly<Record<string, string | undefined>> = process.env) {
  return readConfig(env, [identityConfig, emailConfig, repositoryConfig]);
}

export type Config = ReturnType<typeof loadConfig>;

export function loadConfigOrExit(): Config {
  try {
    return loadConfig();
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    console.error(err.message);
    process.exit(2);
  }
}
