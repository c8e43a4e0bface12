/**
 * One Koa app per service: body parsing, openapi-backend routing and validation against the
 * generated OpenAPI document, typed handlers, and one central error handler. Every client error
 * is a documented 4xx problem; anything unexpected is a logged 500 with no internals.
 */
import Koa from "koa";
import type { Context as ApiContext, Document } from "openapi-backend";
import type { Logger } from "pino";
import { HttpProblem, type HttpResponseError, asProblem, bearerChallenge } from "./problem.ts";
import type { HandlerRequest, RequestHeaders } from "./handler-types.ts";
import { bodyParser } from "./body.ts";
import { backendFor } from "./compiled-document.ts";
import { clientAddress } from "./client-address.ts";
import { assertResponseMatchesSpec, checkContentType, refuseNulCharacters, toFieldErrors } from "./contract-checks.ts";
import { deprecationHeaders } from "./deprecation.ts";
import { errorHandler } from "./errors.ts";
import { requestLog } from "./request-log.ts";
import { TRUST_NONE, type TrustProxy } from "./trusted-proxy.ts";
import { forwardedClient, type ProxyHeader } from "./forwarded.ts";
import { strictTransportSecurity } from "./transport-security.ts";
import type { PlatformConfig } from "../config.ts";
import { UNKNOWN_OPERATION, type ServiceMetrics } from "../observability/metrics.ts";

/** What the app needs of a handler; the typed HandlerMap of each service satisfies it. */
export type AnyHandler<Auth, Deps> = (
  // biome-ignore lint/suspicious/noExplicitAny: any request type, so every typed handler of a service's map fits (parameters are contravariant)
  req: HandlerRequest<any, Auth>,
  deps: Deps,
) => Promise<{ status: number; body?: unknown; headers?: Record<string, string | string[]>; contentType?: string }>;

/** `method` and `path` (no query): what a DPoP proof names (RFC 9449 §4.3). */
export type SecurityHandler<Auth> = (req: { headers: RequestHeaders; method: string; path: string }) => Promise<Auth>;

export interface ServiceAppOptions<Deps, Auth> {
  name: string;
  /** The generated OpenAPI 3.0 document: its path, or the document parsed. */
  definition: string | Document;
  handlers: Partial<Record<string, AnyHandler<Auth, Deps>>>;
  /** Security scheme name → verifier; throws HttpProblem (401) on a bad credential. */
  securityHandlers: Record<string, SecurityHandler<Auth>>;
  /** `realm` of RFC 6750 challenges. */
  realm: string;
  deps: Deps;
  logger: Logger;
  bodyLimitBytes: number;
  /** Larger bodies for a few operations (email's send: 10 MiB), by method and path. */
  largeBodies?: Array<{ method: string; path: string; limitBytes: number }>;
  validateResponses: boolean;
  /** Koa middleware that runs before routing (for HTML pages outside the API, static files...). */
  before?: Koa.Middleware[];
  /**
   * Per-operation answers for contract failures (validation 400, 415, NUL, body-parser errors):
   * operations whose contract answers errors in another format (RFC 6749 JSON, HTML pages) turn
   * the generic problem into their own response. Gets the raw, unvalidated request.
   */
  problemMappers?: Partial<Record<string, ProblemMapper>>;
  /** Request counts and durations by operation and status (X-API-11). */
  metrics?: ServiceMetrics;
  /**
   * Our reverse proxies (TRUST_PROXY): only their `X-Request-Id` is kept (X-API-12), and only what
   * they say about the client (PROXY_HEADER: address, scheme, host) is believed.
   */
  trustProxy?: TrustProxy;
  proxyHeader?: ProxyHeader;
  /** The service's configured public URL: when it is https, every answer carries `Strict-Transport-Security` (X-API-17). */
  publicUrl?: string;
}

/** What every service's app takes alike from the platform's configuration: the body limit, response checks, proxies. */
export const platformAppOptions = (
  config: Pick<PlatformConfig, "BODY_LIMIT_BYTES" | "VALIDATE_RESPONSES" | "TRUST_PROXY" | "PROXY_HEADER">,
) => ({
  bodyLimitBytes: config.BODY_LIMIT_BYTES,
  validateResponses: config.VALIDATE_RESPONSES,
  trustProxy: config.TRUST_PROXY,
  proxyHeader: config.PROXY_HEADER,
});

export interface RawRequest {
  query: Record<string, string | string[] | undefined>;
  body: unknown;
  headers: RequestHeaders;
  ip: string;
}

export type ProblemMapper = (problem: HttpProblem, req: RawRequest) => Promise<HttpResponseError> | HttpResponseError;

export async function createServiceApp<Deps, Auth>(options: ServiceAppOptions<Deps, Auth>): Promise<Koa> {
  const { logger } = options;
  const api = await backendFor(options.definition);

  const securityHandlers = Object.fromEntries(
    Object.entries(options.securityHandlers).map(([scheme, verify]) => [
      scheme,
      (c: ApiContext) => verify({ headers: c.request.headers, method: c.request.method, path: c.request.path }),
    ]),
  );

  api.register({
    notFound: () => {
      throw new HttpProblem(404, "not_found", "No such endpoint.");
    },
    methodNotAllowed: (c: ApiContext, ctx: Koa.Context) => {
      const allowed = ["get", "put", "post", "delete", "patch"].filter((method) => {
        try {
          return Boolean(api.router.matchOperation({ ...c.request, method }, true));
        } catch {
          return false;
        }
      });
      ctx.set("Allow", allowed.map((m) => m.toUpperCase()).join(", "));
      throw new HttpProblem(405, "method_not_allowed", `${c.request.method.toUpperCase()} is not allowed here.`);
    },
    notImplemented: (c: ApiContext) => {
      throw new HttpProblem(501, "not_implemented", `${c.operation.operationId} is specified but not implemented yet.`);
    },
    unauthorizedHandler: (c: ApiContext) => {
      const failure = Object.values(c.security ?? {}).find(
        (r): r is { error: unknown } => typeof r === "object" && r !== null && "error" in r,
      );
      const refusal = asProblem(failure?.error);
      if (refusal) throw refusal;
      if (failure?.error) logger.error({ err: failure.error }, "security handler failed");
      throw bearerChallenge(options.realm, "This operation needs a Bearer token.");
    },
    validationFail: (c: ApiContext) => {
      throw new HttpProblem(400, "validation_failed", "The request does not match the contract.", {
        errors: toFieldErrors(c.validation.errors ?? []),
      });
    },
    postRoutingHandler: (c: ApiContext, ctx: Koa.Context) => {
      // The metrics label: the operation, never the raw path (bounded cardinality).
      ctx.state.operationId = c.operation?.operationId ?? UNKNOWN_OPERATION;
      // A deprecated operation says so on every answer, errors included (X-API-14).
      for (const [k, v] of Object.entries(deprecationHeaders(c.operation))) ctx.set(k, v);
      checkContentType(c, ctx);
      refuseNulCharacters(c);
    },
  });
  for (const [scheme, handler] of Object.entries(securityHandlers)) api.registerSecurityHandler(scheme, handler);
  for (const [operationId, handler] of Object.entries(options.handlers)) {
    if (!handler) continue;
    api.register(operationId, async (c: ApiContext, ctx: Koa.Context) => {
      const auth = Object.values(c.security ?? {}).find((r) => r && typeof r === "object" && !("error" in r)) as Auth;
      const result = await handler(
        {
          params: c.request.params ?? {},
          query: c.request.query ?? {},
          headers: c.request.headers,
          body: c.request.requestBody,
          auth,
          ip: clientAddress(ctx),
        },
        options.deps,
      );
      if (options.validateResponses && !result.contentType) assertResponseMatchesSpec(api, c, result, logger);
      ctx.status = result.status;
      for (const [k, v] of Object.entries(result.headers ?? {})) ctx.set(k, v);
      if (result.body !== undefined) {
        ctx.body = result.body;
        ctx.type = result.contentType ?? "application/json";
      } else {
        // No body means none: without this Koa sends the status text ("OK", text/plain), which the
        // contract does not declare (RFC 7009's 200 of /oauth/revoke, redirects). Koa turns an
        // explicit null into 204, so the status is set again after it.
        ctx.body = null;
        ctx.status = result.status;
      }
    });
  }

  const operationOf = (ctx: Koa.Context): string | undefined => {
    try {
      return api.router.matchOperation({ method: ctx.method, path: ctx.path, headers: {} }, true)?.operationId;
    } catch {
      return undefined;
    }
  };
  const takesNoBody = (ctx: Koa.Context): boolean => {
    try {
      const operation = api.router.matchOperation({ method: ctx.method, path: ctx.path, headers: {} }, true);
      return operation !== undefined && !operation.requestBody;
    } catch {
      return false;
    }
  };
  // Koa's own `proxy` reads X-Forwarded-* from any peer; forwardedClient believes our proxies only.
  const app = new Koa({ proxy: false });
  // First, so that every answer carries it, whatever middleware below answers or throws.
  app.use(strictTransportSecurity(options.publicUrl));
  app.use(forwardedClient(options.trustProxy ?? TRUST_NONE, options.proxyHeader ?? "x-forwarded"));
  app.use(
    requestLog(logger, {
      trustProxy: options.trustProxy ?? TRUST_NONE,
      // Requests refused before routing (body too large, malformed) are still counted under their operation.
      observe:
        options.metrics &&
        ((ctx, seconds) =>
          options.metrics!.observeRequest(ctx.state.operationId ?? operationOf(ctx) ?? UNKNOWN_OPERATION, ctx.status, seconds)),
    }),
  );
  app.use(
    errorHandler(logger, options.name, async (problem, ctx) => {
      const operationId = operationOf(ctx);
      const mapper = operationId ? options.problemMappers?.[operationId] : undefined;
      if (!mapper) return undefined;
      const raw = {
        query: ctx.query as RawRequest["query"],
        body: (ctx.request as { body?: unknown }).body,
        headers: ctx.headers,
        ip: clientAddress(ctx),
      };
      return mapper(problem, raw);
    }),
  );
  app.use(async (ctx, next) => {
    ctx.set("X-Content-Type-Options", "nosniff");
    ctx.set("Cache-Control", "no-store");
    await next();
  });
  for (const middleware of options.before ?? []) app.use(middleware);
  const parserFor = (limitBytes: number) => bodyParser({ limitBytes });
  const parser = parserFor(options.bodyLimitBytes);
  const large = (options.largeBodies ?? []).map((b) => ({ ...b, parser: parserFor(b.limitBytes) }));
  app.use((ctx, next) => {
    // An operation that declares no request body never reads one, whatever the method (X-API-16):
    // what is sent is ignored, as on GET and DELETE, so it cannot cause the 413 or 415 that only
    // operations with a body declare.
    if (takesNoBody(ctx)) {
      ctx.request.body = {};
      return next();
    }
    return (large.find((b) => b.method === ctx.method && b.path === ctx.path)?.parser ?? parser)(ctx, next);
  });
  app.use(async (ctx) => {
    await api.handleRequest(
      {
        method: ctx.method,
        path: ctx.path,
        query: ctx.query as Record<string, string | string[]>,
        body: ctx.request.body,
        headers: ctx.headers as Record<string, string | string[]>,
      },
      ctx,
    );
  });
  return app;
}
