/**
 * Where the token a command sends comes from (X-CLI-4). The environment wins over the config file,
 * as `GH_TOKEN` does for gh, so a CI job needs no `rb login`, no `rb agent register` and no config file:
 * - `RB_TOKEN`: a user's access token (`accessToken` of `POST /auth/login`). Sent as it is, never
 *   refreshed and never stored: when it expires the job sets a new one.
 * - `RB_AGENT_TOKEN`: a build agent's token (`agentToken` of `POST /buildagent/register`), for
 *   `rb agent poll` and `rb agent report`.
 * A token from the config file goes only to the server that issued it (the file records which); one
 * from the environment goes to the server the command names, as the user chose both. Tokens have no
 * flag: a command line can be read by every user of the machine (`ps`). An empty variable is unset.
 */
import type { StoredAgent, StoredConfig, StoredTokens } from "./config-store.ts";

export const USER_TOKEN_VARIABLE = "RB_TOKEN";
export const AGENT_TOKEN_VARIABLE = "RB_AGENT_TOKEN";

export type UserCredential = { from: "environment"; accessToken: string } | { from: "config file"; tokens: StoredTokens };

export type AgentCredential = { from: "environment"; agentToken: string } | { from: "config file"; agent: StoredAgent };

/** The user token for `server`: `RB_TOKEN`, else the pair `rb login` stored for that server. */
export function userCredential(env: NodeJS.ProcessEnv, config: StoredConfig, server: string): UserCredential | undefined {
  const fromEnvironment = env[USER_TOKEN_VARIABLE];
  if (fromEnvironment) return { from: "environment", accessToken: fromEnvironment };
  if (config.tokens && config.server === server) return { from: "config file", tokens: config.tokens };
  return undefined;
}

/** The agent token for `server`: `RB_AGENT_TOKEN`, else the agent `rb agent register` stored for that server. */
export function agentCredential(env: NodeJS.ProcessEnv, config: StoredConfig, server: string): AgentCredential | undefined {
  const fromEnvironment = env[AGENT_TOKEN_VARIABLE];
  if (fromEnvironment) return { from: "environment", agentToken: fromEnvironment };
  if (config.agent && config.agent.server === server) return { from: "config file", agent: config.agent };
  return undefined;
}

/**
 * The claims of a token, read without checking its signature: only to show whose and until when
 * (`rb auth status`), never to decide anything. Undefined when it is not a JWT.
 */
export function unverifiedClaims(token: string): { sub?: string; exp?: number } | undefined {
  const payload = token.split(".")[1];
  if (!payload) return undefined;
  try {
    const claims: unknown = JSON.parse(Buffer.from(payload, "base64url").toString("utf8"));
    return typeof claims === "object" && claims !== null ? (claims as { sub?: string; exp?: number }) : undefined;
  } catch {
    return undefined;
  }
}
