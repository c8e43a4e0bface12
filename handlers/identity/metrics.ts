/** What the identity service counts of its own (X-API-11): token requests by grant type and outcome. */
import { outcomeCounter, type ServiceMetrics } from "../../server/observability/metrics.ts";
import type { GrantRecorder } from "./domain/context.ts";
import type { OAuthErrorCode } from "./domain/oauth/errors.ts";
import { GRANT_TYPES } from "./domain/oauth/grants/registry.ts";

/** `success`, or the RFC 6749 §5.2 error code the token endpoint answered; `error` for a 500. */
export const GRANT_OUTCOMES = [
  "success",
  "invalid_request",
  "invalid_client",
  "invalid_grant",
  "unauthorized_client",
  "unsupported_grant_type",
  "invalid_scope",
  "error",
] as const satisfies readonly ("success" | "error" | OAuthErrorCode)[];

/** `oauth_token_grants_total`: every grant type a grant module serves, and `other` for any other value (or none). */
export function tokenGrantMetrics(metrics: ServiceMetrics): GrantRecorder {
  const count = outcomeCounter(
    metrics,
    "oauth_token_grants_total",
    "Token endpoint requests, by grant_type (other: unsupported or missing) and outcome (success or the OAuth error code).",
    GRANT_OUTCOMES,
    { label: "grant_type", values: GRANT_TYPES },
  );
  return { grant: (grantType: string, outcome: string) => count(outcome, grantType) };
}
