/**
 * How a thrown error becomes the answer. An `HttpResponseError` is written as it is; a problem (or a
 * domain error, as its problem) is `application/problem+json` (RFC 9457), unless the operation's
 * mapper answers it in its own format; anything else is a bug: logged, and a bare 500 that says
 * nothing of its cause.
 */
import type Koa from "koa";
import type { Logger } from "pino";
import { asProblem, HttpProblem, HttpResponseError } from "./problem.ts";

/** Writes `problem` as the answer: its status, its headers and its problem+json body. */
function writeProblem(ctx: Koa.Context, problem: HttpProblem): void {
  ctx.status = problem.status;
  for (const [k, v] of Object.entries(problem.headers)) ctx.set(k, v);
  ctx.type = "application/problem+json";
  ctx.body = problem.toBody();
}

function writeResponse(ctx: Koa.Context, r: HttpResponseError): void {
  ctx.status = r.status;
  for (const [k, v] of Object.entries(r.headers)) ctx.set(k, v);
  if (r.body !== undefined) {
    ctx.body = r.body;
    ctx.type = r.contentType;
  }
}

/**
 * An `HttpProblem` thrown below is answered as problem+json; anything else goes on up. For Koa apps
 * that are not a service's (the mocks' front, tests of one middleware): a service's app answers
 * through `errorHandler`.
 */
export function problemMiddleware(): Koa.Middleware {
  return async (ctx, next) => {
    try {
      await next();
    } catch (err) {
      if (!(err instanceof HttpProblem)) throw err;
      writeProblem(ctx, err);
    }
  };
}

/**
 * A service's central error handler. `mapProblem` answers a client error in the operation's own
 * format (RFC 6749 JSON, an HTML page) when it has one.
 */
export function errorHandler(
  logger: Logger,
  service: string,
  mapProblem: (problem: HttpProblem, ctx: Koa.Context) => Promise<HttpResponseError | undefined>,
): Koa.Middleware {
  return async (ctx, next) => {
    try {
      await next();
    } catch (thrown) {
      if (thrown instanceof HttpResponseError) return writeResponse(ctx, thrown);
      // Domain errors become their problems here, so the mappers and the answer see one type.
      const err = asProblem(thrown) ?? thrown;
      if (err instanceof HttpProblem && err.status < 500) {
        try {
          const mapped = await mapProblem(err, ctx);
          if (mapped) return writeResponse(ctx, mapped);
        } catch (mapErr) {
          if (mapErr instanceof HttpResponseError) return writeResponse(ctx, mapErr);
          logger.error({ err: mapErr, service, path: ctx.path }, "problem mapper failed");
        }
      }
      if (!(err instanceof HttpProblem)) logger.error({ err, service, path: ctx.path, requestId: ctx.state.requestId }, "unexpected error");
      writeProblem(ctx, toProblem(err));
    }
  };
}

/** Anything that is not an HttpProblem is a bug: a bare 500. */
function toProblem(err: unknown): HttpProblem {
  if (err instanceof HttpProblem) return err;
  return new HttpProblem(500, "internal_error", "Something went wrong on our side. It has been logged.");
}
