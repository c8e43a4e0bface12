/** Assembles the repository-and-build service: database, keys, domain services, handlers, Koa app. */
import type { Logger } from "pino";
import type { Clock } from "../../server/clock.ts";
import { signInPolicyOf } from "../../server/config.ts";
import { definitionPath } from "../../server/definitions.ts";
import { createServiceApp, platformAppOptions } from "../../server/http/app.ts";
import { corsMiddleware } from "../../server/http/cors.ts";
import { platformHandlers } from "../../server/http/platform-handlers.ts";
import { createServiceMetrics } from "../../server/observability/metrics.ts";
import { createReadiness } from "../../server/lifecycle.ts";
import { openKeyRing } from "../../server/keys/ring.ts";
import { keyEncryption } from "../../server/security/key-encryption.ts";
import { createSignInThrottle } from "../../server/security/sign-in-throttle.ts";
import { bearerToken } from "../../server/security/tokens.ts";
import { closeAndRethrow, openDatabase } from "../../server/storage/db.ts";
import { agentHandlers } from "./agents.ts";
import { authHandlers } from "./auth.ts";
import { repositoryCorsPolicy } from "./cors.ts";
import type { RepositoryDeps, RepositoryHandlers } from "./repository-handlers.ts";
import { createAccounts } from "./domain/accounts.ts";
import { createAgents } from "./domain/agents.ts";
import { createRepositories } from "./domain/repositories.ts";
import { createTokenService, REALM, type Principal } from "./domain/tokens.ts";
import { repositoryHandlers } from "./repositories.ts";
import { migrations } from "./storage/migrations.ts";
import { repositoryKeyPurposes } from "./signing-keys.ts";
import { repositoryListener, repositoryTokenLifetimesOf, type RepositoryServiceConfig, trustedIssuerOf } from "./config.ts";
import { createExternalUsers } from "./domain/external-users.ts";
import { createTrustedIssuer } from "./domain/trusted-issuer.ts";
import { createRepositoryStorage } from "./storage/index.ts";

export async function createRepositoryService(config: RepositoryServiceConfig, clock: Clock, logger: Logger) {
  const db = await openDatabase({ service: "repository", databaseUrl: config.DATABASE_URL, dataDir: config.DATA_DIR, migrations });
  const storage = createRepositoryStorage(db);
  const { publicUrl } = repositoryListener(config);
  const lifetimes = repositoryTokenLifetimesOf(config);
  const purposes = repositoryKeyPurposes(lifetimes);
  const ring = (purpose: (typeof purposes)["user"]) =>
    openKeyRing({
      ...purpose,
      db,
      clock,
      encryption: keyEncryption(config.KEY_ENCRYPTION_KEY, config.KEY_ENCRYPTION_KEY_PREVIOUS),
      refreshSeconds: config.SIGNING_KEY_REFRESH_SECONDS,
      onRefreshError: (err) =>
        logger.warn({ err, service: "repository" }, "reading the signing keys failed; the keys read before still sign and verify"),
    });
  const userKeys = await ring(purposes.user).catch(closeAndRethrow(db));
  const agentKeys = await ring(purposes.agent).catch(closeAndRethrow(db));
  // The identity service whose access tokens are user tokens here too (X-RB-14), when one is configured.
  const trustedSettings = trustedIssuerOf(config);
  const trusted =
    trustedSettings &&
    createExternalUsers(
      createTrustedIssuer(trustedSettings, {
        clock,
        onFetchError: (err) =>
          logger.warn({ err, service: "repository", issuer: trustedSettings.issuer }, "fetching the trusted issuer's keys failed"),
      }),
      storage.externalAccounts,
      clock,
    );
  const tokens = createTokenService({
    issuer: publicUrl,
    userKeys,
    agentKeys,
    clock,
    refreshTokens: storage.refreshTokens,
    agents: storage.agents,
    ...(trusted ? { trusted } : {}),
    ...lifetimes,
  });
  // The shared sign-in policy (X-RB-6, X-RB-9).
  const accounts = createAccounts(storage.users, clock, createSignInThrottle(storage.signInThrottle, clock, signInPolicyOf(config)));
  const deps: RepositoryDeps = {
    accounts,
    tokens,
    repositories: createRepositories(storage, clock),
    agents: createAgents(storage, tokens, clock),
  };

  // Shutdown (server/lifecycle.ts) turns it off, so that /ready answers 503 while requests drain.
  const readiness = createReadiness();
  const metrics = createServiceMetrics();
  const handlers: RepositoryHandlers = {
    ...platformHandlers({
      service: "repository",
      db,
      clock,
      readiness,
      metrics,
      metricsToken: config.METRICS_TOKEN,
      reference: { title: "Repository and Build Service", definitionPath: definitionPath("repository") },
    }),
    ...authHandlers,
    ...repositoryHandlers,
    ...agentHandlers,
  };

  const app = await createServiceApp<RepositoryDeps, Principal | undefined>({
    name: "repository",
    definition: definitionPath("repository"),
    handlers,
    securityHandlers: {
      UserAuth: ({ headers }) => tokens.authenticateUser(bearerToken(headers.authorization)),
      AgentAuth: ({ headers }) => tokens.authenticateAgent(bearerToken(headers.authorization)),
    },
    realm: REALM,
    deps,
    logger: logger.child({ service: "repository" }),
    ...platformAppOptions(config),
    metrics,
    publicUrl,
    // Pages of the origins in CORS_ORIGINS (X-RB-10).
    before: [corsMiddleware(repositoryCorsPolicy(config.CORS_ORIGINS), { ownOrigin: new URL(publicUrl).origin })],
  });
  return { app, db, deps, readiness, close: () => db.destroy() };
}
