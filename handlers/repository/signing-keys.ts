/**
 * The repository service's two signing keys: users' access and refresh tokens (the refresh token
 * lives longest: REPOSITORY_REFRESH_TTL_SECONDS), and build agents' tokens (REPOSITORY_AGENT_TTL_SECONDS).
 */
import type { KeyPurpose } from "../../server/keys/ring.ts";
import { ACCESS_TOKEN_TTL_SECONDS, type TokenLifetimes } from "./domain/tokens.ts";

export const repositoryKeyPurposes = (lifetimes: TokenLifetimes) =>
  ({
    user: {
      purpose: "repository-user",
      alg: "EdDSA",
      maxTokenLifetimeSeconds: Math.max(ACCESS_TOKEN_TTL_SECONDS, lifetimes.refreshTtlSeconds),
    },
    agent: { purpose: "repository-agent", alg: "EdDSA", maxTokenLifetimeSeconds: lifetimes.agentTtlSeconds },
  }) satisfies Record<string, KeyPurpose>;
