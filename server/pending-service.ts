/**
 * A service whose contract is published but whose operations are still being built: it routes and
 * validates by its generated document, answers health, refuses credentials it cannot check yet
 * (401), and answers 501 `not_implemented` for the rest. Each service replaces this as its
 * handlers land (the email issue).
 */
import type { Logger } from "pino";
import type { Clock } from "./clock.ts";
import type { Config } from "./config.ts";
import { definitionPath } from "./definitions.ts";
import { createServiceApp } from "./http/app.ts";
import { healthHandler } from "./http/health.ts";
import { openDatabase } from "./storage/db.ts";
import { createSigningKeysTable } from "./keys.ts";

export async function createPendingService(name: "email", config: Config, clock: Clock, logger: Logger) {
  const db = await openDatabase({
    service: name,
    databaseUrl: config.DATABASE_URL,
    dataDir: config.DATA_DIR,
    migrations: { "0001_signing_keys": { up: createSigningKeysTable, down: (k) => k.schema.dropTableIfExists("signing_keys") } },
  });
  const app = await createServiceApp({
    name,
    definition: definitionPath(name) as never,
    handlers: { health: healthHandler(name, db, clock) },
    securityHandlers: {},
    realm: name,
    deps: {},
    logger: logger.child({ service: name }),
    bodyLimitBytes: config.BODY_LIMIT_BYTES,
    validateResponses: config.VALIDATE_RESPONSES,
  });
  return { app, db, close: () => db.destroy() };
}
