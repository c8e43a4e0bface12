/** The services this platform runs, by name: how each is built, and its HTTP listener. */
import type Koa from "koa";
import type { Logger } from "pino";
import type { Clock } from "../server/clock.ts";
import type { Listener } from "../server/config.ts";
import type { Readiness } from "../server/lifecycle.ts";
import { repositoryListener } from "../handlers/repository/config.ts";
import { createRepositoryService } from "../handlers/repository/service.ts";
import { identityListener } from "../handlers/identity/config.ts";
import { createIdentityService } from "../handlers/identity/service.ts";
import { emailListener } from "../handlers/email/config.ts";
import { createEmailService } from "../handlers/email/service.ts";
import type { Config } from "./load-config.ts";

export type ServiceName = "identity" | "repository" | "email";

export interface RunningService {
  app: Koa;
  /** Answered by the service's `/ready`; switched off when the process starts draining. */
  readiness: Readiness;
  /** Stops background work (dispatchers, listeners, purges) and closes the database. */
  close(): Promise<void>;
}

export interface Service {
  create(config: Config, clock: Clock, logger: Logger): Promise<RunningService>;
  /** The port it listens on, the variable that sets it, its public URL (`<NAME>_PORT`, `<NAME>_PUBLIC_URL`). */
  listener(config: Config): Listener;
}

export const SERVICES: Record<ServiceName, Service> = {
  identity: { create: createIdentityService, listener: identityListener },
  repository: { create: createRepositoryService, listener: repositoryListener },
  email: { create: createEmailService, listener: emailListener },
};
