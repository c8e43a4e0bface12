/** What the repository-and-build handlers are given: domain services, named queries and the clock. */
import type { Clock } from "../../server/clock.ts";
import type { HandlerMap } from "../../server/http/handler-types.ts";
import type { operations } from "../../generated/types/repository.ts";
import type { Accounts } from "./domain/accounts.ts";
import type { Principal, TokenService } from "./domain/tokens.ts";
import type { RepositoryQueries } from "./storage/queries.ts";

export interface RepositoryDeps {
  accounts: Accounts;
  tokens: TokenService;
  queries: RepositoryQueries;
  clock: Clock;
}

export type RepositoryHandlers = HandlerMap<operations, Principal | undefined, RepositoryDeps>;
export type { operations };
