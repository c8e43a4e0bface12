/** The repository service's configuration section: its listener, the browser origins it answers, its tokens' lifetimes. */
import { z } from "zod";
import { defineSection, type Parsed, type RuleValues, rule, seconds, variable } from "../../server/config-schema.ts";
import { listenerOf, listenerVariables, type PlatformConfig } from "../../server/config.ts";
import { originProblem } from "../../server/origins.ts";
import type { TokenLifetimes } from "./domain/tokens.ts";
import { fetchableUrl, type TrustedIssuerSettings } from "./domain/trusted-issuer.ts";

const repositoryVariables = {
  ...listenerVariables("REPOSITORY", "repository", 3002, "the `iss` of its tokens and the base of the links it publishes."),
  CORS_ORIGINS: variable(
    z
      .string()
      .default("")
      .transform((value, ctx) => {
        const origins = value
          .split(",")
          .map((o) => o.trim())
          .filter(Boolean);
        for (const origin of origins) {
          const why = origin === "*" ? "`*` is not an origin: list each origin" : originProblem(origin);
          if (why) ctx.addIssue({ code: "custom", message: `${JSON.stringify(origin)} ${why}` });
        }
        return origins;
      }),
    {
      description:
        "Origins whose browser pages may call the repository API (X-RB-10), comma-separated, each exactly as browsers send it " +
        "(`https://builds.example.com,http://localhost:5173`: no path, no trailing slash, no default port; `*` is refused). " +
        "The identity service decides per application (X-ID-CORS-2); the email service answers no browser (X-EM-26).",
      defaultText: "none (same origin only)",
    },
  ),
  REPOSITORY_REFRESH_TTL_SECONDS: variable(seconds.default(30 * 24 * 3600), {
    description: "Lifetime of a user's refresh token.",
  }),
  REPOSITORY_AGENT_TTL_SECONDS: variable(seconds.default(90 * 24 * 3600), {
    description: "Lifetime of a build agent's token.",
  }),
  // The repository service as a resource server of an identity service (X-RB-14..X-RB-16).
  REPOSITORY_TRUSTED_ISSUER: variable(z.string().url().max(2048).optional(), {
    description:
      "Issuer whose access tokens the repository API accepts beside its own (X-RB-14): exactly its `iss` " +
      "(`https://id.example.com`). Its discovery document (`/.well-known/openid-configuration`, else RFC 8414's " +
      "`/.well-known/oauth-authorization-server`) and JWKS are fetched and cached, and a token with an unknown `kid` refetches " +
      "the JWKS (key rotation). `https`, or `http` on a loopback host (development). Needs `REPOSITORY_TRUSTED_AUDIENCE`.",
    defaultText: "none (only this service's own tokens)",
  }),
  REPOSITORY_TRUSTED_AUDIENCE: variable(z.string().min(1).optional(), {
    description:
      "The `aud` the trusted issuer's access tokens must carry to be accepted here (X-RB-14): the resource identifier " +
      "or client id the identity service puts in tokens meant for this API.",
    defaultText: "none",
  }),
  REPOSITORY_TRUSTED_SCOPE: variable(
    z
      .string()
      .regex(/^[\x21\x23-\x5b\x5d-\x7e]+$/, "one scope token (RFC 6749 §3.3)")
      .default("repository"),
    { description: "The scope a trusted issuer's access token must carry to be accepted here (X-RB-14)." },
  ),
};

type RepositoryRuleValues = RuleValues<typeof repositoryVariables>;

export const repositoryConfig = defineSection({
  title: "Repository service",
  summary: "Sign-in with JWTs, repositories and builds, and the build agents the `rb` CLI runs.",
  variables: repositoryVariables,
  rules: [
    rule<RepositoryRuleValues>(
      ["REPOSITORY_TRUSTED_ISSUER"],
      (v) =>
        Boolean(v.REPOSITORY_TRUSTED_ISSUER) &&
        !fetchableUrl(v.REPOSITORY_TRUSTED_ISSUER!) &&
        "must be an https URL (http only on a loopback host)",
    ),
    rule<RepositoryRuleValues>(
      ["REPOSITORY_TRUSTED_AUDIENCE", "REPOSITORY_TRUSTED_ISSUER"],
      (v) =>
        Boolean(v.REPOSITORY_TRUSTED_ISSUER) !== Boolean(v.REPOSITORY_TRUSTED_AUDIENCE) &&
        "is set exactly when REPOSITORY_TRUSTED_ISSUER is",
    ),
    // This service's own tokens carry its public URL as `iss`; trusting that would send them to the other verifier.
    rule<RepositoryRuleValues>(
      ["REPOSITORY_TRUSTED_ISSUER", "REPOSITORY_PUBLIC_URL", "REPOSITORY_PORT", "HOST"],
      (v) =>
        v.REPOSITORY_TRUSTED_ISSUER?.replace(/\/$/, "") === listenerOf(v, "REPOSITORY").publicUrl &&
        "must be another service's issuer, not this service's own public URL",
    ),
  ],
});

/** What the repository service reads: the platform's variables and its own. */
export type RepositoryServiceConfig = PlatformConfig & Parsed<typeof repositoryVariables>;

export const repositoryListener = (config: RepositoryServiceConfig) => listenerOf(config, "REPOSITORY");

export const repositoryTokenLifetimesOf = (config: Parsed<typeof repositoryVariables>): TokenLifetimes => ({
  refreshTtlSeconds: config.REPOSITORY_REFRESH_TTL_SECONDS,
  agentTtlSeconds: config.REPOSITORY_AGENT_TTL_SECONDS,
});

/** The trusted issuer's settings (X-RB-14), or undefined when none is configured. */
export const trustedIssuerOf = (config: Parsed<typeof repositoryVariables>): TrustedIssuerSettings | undefined =>
  config.REPOSITORY_TRUSTED_ISSUER && config.REPOSITORY_TRUSTED_AUDIENCE
    ? { issuer: config.REPOSITORY_TRUSTED_ISSUER, audience: config.REPOSITORY_TRUSTED_AUDIENCE, scope: config.REPOSITORY_TRUSTED_SCOPE }
    : undefined;
