/**
 * The request id and the one log line of every request: method, path (never the query string:
 * it can carry codes and states), status and duration, and the request's metrics when the service
 * counts them.
 */
import type Koa from "koa";
import type { Logger } from "pino";
import { requestIdFor } from "./request-id.ts";
import type { TrustProxy } from "./trusted-proxy.ts";

export function requestLog(
  logger: Logger,
  options: { trustProxy: TrustProxy; observe?: ((ctx: Koa.Context, seconds: number) => void) | undefined },
): Koa.Middleware {
  // The request line has fixed fields, none of them a secret, so it skips the logger's redaction
  // walk over every key, on every request (its cost: bench/results/2026-11-27-token.md). Every other log line is
  // still redacted.
  const lineLogger = logger.child({}, { redact: [] });
  return async (ctx, next) => {
    const started = process.hrtime.bigint();
    ctx.state.requestId = requestIdFor(ctx.headers["x-request-id"], ctx.req.socket.remoteAddress, options.trustProxy);
    ctx.set("X-Request-Id", ctx.state.requestId);
    try {
      await next();
    } finally {
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      options.observe?.(ctx, ms / 1000);
      lineLogger.info({ requestId: ctx.state.requestId, method: ctx.method, path: ctx.path, status: ctx.status, ms }, "request");
    }
  };
}
