/** What the repository-and-build handlers are given (the domain services), and the handler map typed from the generated contract. */
import type { HandlerMap } from "../../server/http/handler-types.ts";
import { admitted } from "../../server/http/handler-inputs.ts";
import type { operations } from "../../generated/types/repository.ts";
import type { Accounts } from "./domain/accounts.ts";
import type { Agents } from "./domain/agents.ts";
import type { Repositories } from "./domain/repositories.ts";
import type { AgentPrincipal, Principal, TokenService } from "./domain/tokens.ts";

export interface RepositoryDeps {
  accounts: Accounts;
  tokens: TokenService;
  repositories: Repositories;
  agents: Agents;
}

export type RepositoryHandlers = HandlerMap<operations, Principal | undefined, RepositoryDeps>;
export type { operations };

/** The user id of an operation secured by UserAuth (openapi-backend has already refused anything else). */
export const userId = (auth: Principal | undefined): string => admitted(auth, "user").userId;

/** The agent of an operation secured by AgentAuth. */
export const agentOf = (auth: Principal | undefined): AgentPrincipal => admitted(auth, "agent");
