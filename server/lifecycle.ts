/**
 * Graceful shutdown (SIGTERM, SIGINT): the instance leaves the load balancer's rotation, finishes
 * what it was asked, and exits.
 *
 *   1. At once: every service's readiness probe (`/ready`) answers 503, and every response carries
 *      `Connection: close`, so keep-alive clients reconnect elsewhere.
 *   2. After `delayMs` (SHUTDOWN_DELAY_MS, for load balancers that poll `/ready`): the ports close,
 *      idle connections are closed, and requests in flight run to their end. Every request the
 *      process accepted a connection for gets a whole answer: a connection whose request has not
 *      arrived yet is not idle (Node counts it active from its acceptance, for `headersTimeout`; one
 *      that never sends is cut off at the deadline), and the connections the kernel has already
 *      queued are accepted before the port closes. What the kernel queues while the port closes is
 *      reset: nothing a process can do avoids that, which is what the delay is for (the balancer
 *      stops sending first). Idle keep-alive connections are left open during the delay, for the
 *      same reason.
 *   3. Then each service closes: its dispatchers claim nothing more and let attempts in flight finish
 *      or give them back, listeners stop, databases close.
 *   Everything is bounded by `timeoutMs` (SHUTDOWN_TIMEOUT_MS) from the signal: what is still open
 *   then is cut off, and the process exits 1 instead of 0.
 */
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { Logger } from "pino";

/** Whether a service should be sent traffic; read by its `/ready` operation. */
export interface Readiness {
  readonly draining: boolean;
  /** From now on `/ready` answers 503. */
  startDraining(): void;
}

export function createReadiness(): Readiness {
  let draining = false;
  return {
    get draining() {
      return draining;
    },
    startDraining() {
      draining = true;
    },
  };
}

/** An HTTP server whose requests are counted so that it can stop without cutting any off. */
export interface DrainableServer {
  /** Requests received and not yet answered. */
  readonly inFlight: number;
  /** Every response from now on (those in flight included, if their headers are not out yet) closes its connection. */
  closeConnectionsAfterResponses(): void;
  /** Closes the port and the idle connections; resolves when every request in flight has been answered. */
  stopAccepting(): Promise<void>;
  /** Destroys every connection left (the deadline passed). */
  cutOff(): void;
}

/** Wraps a listening server; call before it gets traffic so that every request is counted. */
export function drainable(server: Server): DrainableServer {
  const open = new Set<ServerResponse>();
  /** From the signal: every response closes its connection. */
  let closing = false;
  /** From the end of the delay: the port closes, and idle connections are closed as they appear. */
  let portClosing = false;
  let stopped: Promise<void> | undefined;

  // Before the app's own listener, so the header is set before any handler runs.
  server.prependListener("request", (_req: IncomingMessage, res: ServerResponse) => {
    open.add(res);
    if (closing) res.setHeader("Connection", "close");
    res.once("close", () => {
      open.delete(res);
      if (!portClosing) return;
      // Its connection, kept alive by a client that ignores `Connection: close` or answered before
      // draining began, is idle now: close it rather than wait for the keep-alive timeout.
      setImmediate(() => server.closeIdleConnections());
    });
  });

  return {
    get inFlight() {
      return open.size;
    },
    closeConnectionsAfterResponses() {
      // Idle keep-alive connections stay open while the port does: a balancer may still send on its
      // pooled connections during the delay, and one closed as a request goes out is a reset. Each
      // ends with its next response (`Connection: close`), or when the port closes.
      closing = true;
      for (const res of open) if (!res.headersSent) res.setHeader("Connection", "close");
    },
    stopAccepting() {
      stopped ??= new Promise<void>((resolve) => {
        this.closeConnectionsAfterResponses();
        portClosing = true;
        // Closing a listening socket resets the connections in its accept queue, which their clients
        // count as connected. The signal may be handled in the same turn of the event loop in which
        // they arrived (or after a busy turn in which they queued up); one more poll phase accepts
        // them all (libuv accepts until the queue is empty), and the second immediate runs after it.
        setImmediate(() =>
          setImmediate(() =>
            // Closes the idle connections (Node's `close` does), then calls back once the port is
            // closed and every connection has ended, which (responses closing their connections,
            // idle ones closed) is when the last request was answered.
            server.close(() => resolve()),
          ),
        );
      });
      return stopped;
    },
    cutOff() {
      server.closeAllConnections();
    },
  };
}

export interface ShutdownPart {
  name: string;
  readiness: Readiness;
  http: DrainableServer;
  /** Stops the service's background work and closes its database. */
  close(): Promise<void>;
}

export interface ShutdownOptions {
  delayMs: number;
  timeoutMs: number;
  logger: Logger;
  timers?: { setTimeout: typeof setTimeout; clearTimeout: typeof clearTimeout };
}

/** Runs steps 1-3 of the module comment; true when everything finished before the deadline. */
export async function shutDown(parts: ShutdownPart[], options: ShutdownOptions): Promise<boolean> {
  const timers = options.timers ?? { setTimeout, clearTimeout };
  const log = options.logger;
  let deadlineTimer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<"deadline">((resolve) => (deadlineTimer = timers.setTimeout(() => resolve("deadline"), options.timeoutMs)));
  const wait = <T>(work: Promise<T>) => Promise.race([work, deadline]);

  for (const part of parts) {
    part.readiness.startDraining();
    part.http.closeConnectionsAfterResponses();
  }
  if (options.delayMs > 0) {
    log.info({ delayMs: options.delayMs }, "draining: /ready answers 503; still accepting until the delay ends");
    await wait(new Promise<void>((resolve) => timers.setTimeout(resolve, options.delayMs)));
  }
  const inFlight = parts.reduce((n, p) => n + p.http.inFlight, 0);
  log.info({ inFlight }, "draining: ports closed, letting requests in flight finish");
  let clean = (await wait(Promise.all(parts.map((p) => p.http.stopAccepting())))) !== "deadline";
  if (!clean) {
    const cut = parts.reduce((n, p) => n + p.http.inFlight, 0);
    log.warn({ requests: cut, timeoutMs: options.timeoutMs }, "shutdown timeout: cutting off the requests still in flight");
    for (const part of parts) part.http.cutOff();
  }
  // Dispatchers and databases close after the last request, which may still have enqueued work.
  const closed = await wait(
    Promise.all(
      parts.map((p) =>
        p.close().then(
          () => true,
          (err: unknown) => {
            log.error({ err, service: p.name }, "closing the service failed");
            return false;
          },
        ),
      ),
    ),
  );
  if (closed === "deadline") {
    log.warn(
      { timeoutMs: options.timeoutMs },
      "shutdown timeout: background work still running is left to other instances (leases expire)",
    );
    clean = false;
  } else if (closed.includes(false)) {
    clean = false;
  }
  if (deadlineTimer) timers.clearTimeout(deadlineTimer);
  return clean;
}
