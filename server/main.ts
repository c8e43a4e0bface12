/**
 * Runs the services: `node --import tsx server/main.ts [identity|repository|email ...]` (default: all).
 * SQLite files and signing keys are created in DATA_DIR on first start; nothing to configure.
 */
import { loadConfig, ConfigError } from "./config.ts";
import { systemClock } from "./clock.ts";
import { createLogger } from "./logger.ts";
import { listen, type Listening } from "./http/listen.ts";
import { SERVICE_FACTORIES, portOf, type ServiceName, type RunningService } from "./services.ts";

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(err.message);
      process.exit(2);
    }
    throw err;
  }
  const logger = createLogger(config.LOG_LEVEL);
  const requested = process.argv.slice(2) as ServiceName[];
  const names = requested.length ? requested : (Object.keys(SERVICE_FACTORIES) as ServiceName[]);
  const running: Array<{ service: RunningService; http: Listening }> = [];
  for (const name of names) {
    const factory = SERVICE_FACTORIES[name];
    if (!factory) {
      console.error(`Unknown service "${name}". Known: ${Object.keys(SERVICE_FACTORIES).join(", ")}`);
      process.exit(2);
    }
    const service = await factory(config, systemClock, logger);
    const http = await listen(service.app, config.HOST, portOf(config, name));
    running.push({ service, http });
    logger.info({ service: name, url: http.url }, `${name} service listening on ${http.url}`);
  }
  const shutdown = async (signal: string) => {
    logger.info({ signal }, "shutting down");
    for (const { service, http } of running) {
      await http.close();
      await service.close();
    }
    process.exit(0);
  };
  process.once("SIGINT", () => void shutdown("SIGINT"));
  process.once("SIGTERM", () => void shutdown("SIGTERM"));
}

await main();
