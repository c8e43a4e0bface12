/**
 * Runs the services: `node app/main.ts [identity|repository|email ...]` (default: all), on Node's own type
 * stripping, so every module it loads is erasable TypeScript (docs/adr/0011-runtime-without-a-transpiler.md).
 * SQLite files and signing keys are created in DATA_DIR on first start; nothing to configure.
 * SIGTERM or SIGINT drains and stops them (server/lifecycle.ts; SIGTERM waits SHUTDOWN_DELAY_MS before the
 * ports close, SIGINT does not): exit 0 when everything finished within SHUTDOWN_TIMEOUT_MS, 1 otherwise; a
 * second signal exits 1 at once.
 */
import { type Config, loadConfigOrExit } from "./load-config.ts";
import { KeyEncryptionError } from "../server/security/key-encryption.ts";
import { systemClock } from "../server/clock.ts";
import { createLogger } from "../server/logger.ts";
import { listen } from "../server/http/listen.ts";
import { drainable, shutDown, type ShutdownPart } from "../server/lifecycle.ts";
import { SERVICES, type ServiceName } from "./services.ts";
import { withIdentityMailKey } from "./identity-mail-key.ts";

async function main(): Promise<void> {
  const loaded = loadConfigOrExit();
  const logger = createLogger(loaded.LOG_LEVEL);
  const requested = process.argv.slice(2) as ServiceName[];
  const names = requested.length ? requested : (Object.keys(SERVICES) as ServiceName[]);
  // Identity's mail through the email service of this process, when the operator configured none.
  const config = await withIdentityMailKey(loaded, names, systemClock, logger);
  const running: ShutdownPart[] = [];
  for (const name of names) {
    const entry = Object.hasOwn(SERVICES, name) ? SERVICES[name] : undefined;
    if (!entry) {
      console.error(`Unknown service "${name}". Known: ${Object.keys(SERVICES).join(", ")}`);
      process.exit(2);
    }
    const listener = entry.listener(config);
    const service = await entry.create(config, systemClock, logger).catch((err: unknown) => exitOnStartupProblem(err, config));
    const http = await listen(service.app, config.HOST, listener.port).catch((err: unknown) =>
      exitOnStartupProblem(err, config, listener.portVariable),
    );
    running.push({ name, readiness: service.readiness, http: drainable(http.server), close: () => service.close() });
    logger.info({ service: name, url: http.url }, `${name} service listening on ${http.url}`);
  }
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping) {
      logger.warn({ signal }, "second signal: exiting without waiting");
      process.exit(1);
    }
    stopping = true;
    logger.info({ signal, timeoutMs: config.SHUTDOWN_TIMEOUT_MS }, "shutting down: draining");
    // SIGTERM is what an orchestrator or a service manager sends, with a balancer in front to wait
    // for; SIGINT is Ctrl-C at a terminal, where nobody routes traffic by /ready.
    const delayMs = signal === "SIGTERM" ? config.SHUTDOWN_DELAY_MS : 0;
    void shutDown(running, { delayMs, timeoutMs: config.SHUTDOWN_TIMEOUT_MS, logger }).then(
      (clean) => {
        logger.info({ clean }, clean ? "stopped" : "stopped after the shutdown timeout");
        process.exit(clean ? 0 : 1);
      },
      (err: unknown) => {
        logger.error({ err }, "shutdown failed");
        process.exit(1);
      },
    );
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
}

/**
 * A port that is taken (or not ours to take) is a configuration problem, not a crash: one line naming
 * the variable to change, exit 2 like any other configuration error; so are signing keys that
 * KEY_ENCRYPTION_KEY does not open. Anything else is rethrown.
 */
function exitOnStartupProblem(err: unknown, config: Config, variable?: string): never {
  const e = err as NodeJS.ErrnoException & { port?: number; address?: string };
  if (err instanceof KeyEncryptionError) {
    // Signing keys sealed under another KEY_ENCRYPTION_KEY, or none set: a configuration problem too.
    console.error(err.message);
    process.exit(2);
  }
  if (e?.code !== "EADDRINUSE" && e?.code !== "EACCES") throw err;
  // The service's own HTTP port, or another listener it opened (the email service's inbound SMTP).
  const name =
    variable ?? (e.port !== undefined && e.port === config.EMAIL_INBOUND_SMTP_PORT ? "EMAIL_INBOUND_SMTP_PORT" : "the port settings");
  const where = `${e.address ?? config.HOST}:${e.port ?? "?"}`;
  console.error(
    e.code === "EADDRINUSE"
      ? `${where} is already in use: stop the other process or set ${name} to a free port.`
      : `${where} cannot be opened (permission denied): set ${name} to a port above 1023.`,
  );
  process.exit(2);
}

await main();
