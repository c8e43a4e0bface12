/** What loading the configuration from `env` refuses: the ConfigError's message (it fails when the configuration is accepted). */
import { expect } from "vitest";
import { loadConfig } from "../../app/load-config.ts";
import { ConfigError } from "../../server/config.ts";

export function configRefusal(env: Record<string, string>): string {
  try {
    loadConfig(env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error("the configuration was accepted");
}
