/** The repository service's configuration section: its listener, the browser origins it answers, its tokens' lifetimes. */
import { z } from "zod";
import { defineSection, type Parsed, seconds, variable } from "../../server/config-schema.ts";
import { listenerOf, listenerVariables, type PlatformConfig } from "../../server/config.ts";
import { originProblem } from "../../server/origins.ts";
import type { TokenLifetimes } from "./domain/tokens.ts";

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
};

export const repositoryConfig = defineSection({
  title: "Repository service",
  summary: "Sign-in with JWTs, repositories and builds, and the build agents the `rb` CLI runs.",
  variables: repositoryVariables,
});

/** What the repository service reads: the platform's variables and its own. */
export type RepositoryServiceConfig = PlatformConfig & Parsed<typeof repositoryVariables>;

export const repositoryListener = (config: RepositoryServiceConfig) => listenerOf(config, "REPOSITORY");

export const repositoryTokenLifetimesOf = (config: Parsed<typeof repositoryVariables>): TokenLifetimes => ({
  refreshTtlSeconds: config.REPOSITORY_REFRESH_TTL_SECONDS,
  agentTtlSeconds: config.REPOSITORY_AGENT_TTL_SECONDS,
});
