/** The identity service's signing keys: one ring, for access tokens and ID tokens (both live 1 hour). */
import type { KeyPurpose } from "../../server/keys/ring.ts";
import { ACCESS_TOKEN_TTL_SECONDS } from "./domain/access-tokens.ts";
import { ID_TOKEN_TTL_SECONDS } from "./domain/oauth/grants/issue.ts";

export const identityKeyPurposes = (): KeyPurpose[] => [
  { purpose: "identity-access", alg: "ES256", maxTokenLifetimeSeconds: Math.max(ACCESS_TOKEN_TTL_SECONDS, ID_TOKEN_TTL_SECONDS) },
];
