/** The services this platform runs, by name, each built from the same config, clock and logger. */
import type Koa from "koa";
import type { Logger } from "pino";
import type { Clock } from "../server/clock.ts";
import type { Config } from "../server/config.ts";
import type { Readiness } from "../server/lifecycle.ts";
import { createRepositoryService } from "../handlers/repository/service.ts";
import { createIdentityService } from "../handlers/identity/service.ts";
import { createEmailService } from "../handlers/email/service.ts";

export type ServiceName = "identity" | "repository" | "email";

export interface RunningService {
  app: Koa;
  /** Answered by the service's `/ready`; switched off when the process starts draining. */
  readiness: Readiness;
  /** Stops background work (dispatchers, listeners, purges) and closes the database. */
  close(): Promise<void>;
}

export const SERVICE_FACTORIES: Partial<Record<ServiceName, (config: Config, clock: Clock, logger: Logger) => Promise<RunningService>>> = {
  identity: createIdentityService,
  repository: createRepositoryService,
  email: createEmailService,
};

export const portOf = (config: Config, name: ServiceName): number =>
  ({ identity: config.IDENTITY_PORT, repository: config.REPOSITORY_PORT, email: config.EMAIL_PORT })[name];
