/**
 * The repository service's two signing keys: users' access and refresh tokens (the refresh token
 * lives longest: REPOSITORY_REFRESH_TTL_SECONDS), and build agents' tokens (REPOSITORY_AGENT_TTL_SECONDS).
 */
import type { Config } from "../../server/config.ts";
import type { KeyPurpose } from "../../server/keys/ring.ts";
import { ACCESS_TOKEN_TTL_SECONDS } from "./domain/tokens.ts";

export const repositoryKeyPurposes = (config: Config) =>
  ({
    user: {
      purpose: "repository-user",
      alg: "EdDSA",
      maxTokenLifetimeSeconds: Math.max(ACCESS_TOKEN_TTL_SECONDS, config.REPOSITORY_REFRESH_TTL_SECONDS),
    },
    agent: { purpose: "repository-agent", alg: "EdDSA", maxTokenLifetimeSeconds: config.REPOSITORY_AGENT_TTL_SECONDS },
  }) satisfies Record<string, KeyPurpose>;
