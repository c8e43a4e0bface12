/**
 * The repository service's storage: each store's implementation, chosen once for the database the
 * service opened. The one place in the repository service that looks at the dialect; the domain
 * sees each store's interface only (ADR 0002).
 */
import type { Knex } from "knex";
import type { SignInThrottleStore } from "../../../server/security/sign-in-throttle.ts";
import { knexSignInThrottleStore, postgresSignInThrottleStore } from "../../../server/security/sign-in-throttle-store.ts";
import { dialectOf } from "../../../server/storage/dialect.ts";
import { type AgentStore, knexAgents } from "./agents.ts";
import { type BuildStore, knexBuilds } from "./builds.ts";
import { postgresBuilds } from "./postgres/builds.ts";
import { knexRefreshTokens, type RefreshTokenStore } from "./refresh-tokens.ts";
import { knexRepositories, type RepositoryStore } from "./repositories.ts";
import { knexUsers, type UserStore } from "./users.ts";
import { type ExternalAccountStore, knexExternalAccounts } from "./external-accounts.ts";

export interface RepositoryStorage {
  users: UserStore;
  refreshTokens: RefreshTokenStore;
  repositories: RepositoryStore;
  builds: BuildStore;
  agents: AgentStore;
  /** Where the sign-in throttle counts attempts (X-RB-6, X-RB-9); no retention job runs here, so the store prunes its own old rows. */
  signInThrottle: SignInThrottleStore;
  /** Users of the trusted issuer, by its token's `iss` and `sub` (X-RB-15). */
  externalAccounts: ExternalAccountStore;
}

const THROTTLE_TABLES = { failures: "signin_failures", knownAddresses: "signin_known_addresses" };

export function createRepositoryStorage(db: Knex): RepositoryStorage {
  const sqlite = dialectOf(db) === "sqlite";
  return {
    users: knexUsers(db),
    refreshTokens: knexRefreshTokens(db),
    repositories: knexRepositories(db),
    builds: sqlite ? knexBuilds(db) : postgresBuilds(db),
    agents: knexAgents(db),
    signInThrottle: (sqlite ? knexSignInThrottleStore : postgresSignInThrottleStore)(db, THROTTLE_TABLES, { prune: true }),
    externalAccounts: knexExternalAccounts(db),
  };
}
