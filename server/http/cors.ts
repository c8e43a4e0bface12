/**
 * Cross-origin requests from browsers (the Fetch standard's CORS protocol), answered the way each
 * service's contract states (identity X-ID-CORS-1/2, repository X-RB-10; email answers none,
 * X-EM-26). A service describes its policy; this middleware speaks the protocol:
 *
 * - a path the policy does not name is same-origin only: no CORS header ever, and a preflight
 *   (`OPTIONS` with `Access-Control-Request-Method`) goes on to the router, which answers 405;
 * - an `open` path (public documents, no credentials) carries `Access-Control-Allow-Origin: *`
 *   on every answer and answers every preflight 204;
 * - a `listed` path answers a preflight 204 only for an origin the policy allows, with the
 *   exact origin (never `*`), its methods, its request headers and `Access-Control-Max-Age`,
 *   and 403 `origin_not_allowed` (no CORS header) for any other; an actual request carries the
 *   exact origin only when the policy allows it for that request (`forResponse`, which can look at
 *   the request's client once the request is parsed). Answers vary by origin: `Vary: Origin`.
 *
 * `Access-Control-Allow-Credentials` is never sent: these APIs take bearer tokens and client ids,
 * never cookies, so no browser credentials cross origins. A request from the service's own origin
 * is not cross-origin and gets no CORS headers; `Origin: null` (sandboxed and opaque origins) can
 * never be listed.
 */
import type Koa from "koa";
import type { Logger } from "pino";
import { HttpProblem } from "./problem.ts";

/** How long a browser may reuse an allowed preflight. Each actual request is still checked. */
export const PREFLIGHT_MAX_AGE_SECONDS = 3600;

export interface CorsRoute {
  /** `open`: any origin, with `*`; `listed`: only origins the policy allows, each by its exact value. */
  access: "open" | "listed";
  /** Methods a preflight allows. */
  methods: readonly string[];
  /** Request headers a preflight allows, besides the CORS-safelisted ones. */
  allowHeaders: readonly string[];
  /** Response headers a page may read, besides the CORS-safelisted ones. */
  exposeHeaders: readonly string[];
}

export interface CorsPolicy {
  /** The rules of a path, or undefined for a same-origin-only path. */
  route(path: string): CorsRoute | undefined;
  /** Whether pages of `origin` may call this `listed` path at all: decides preflights. */
  allows(origin: string, path: string): Promise<boolean>;
  /**
   * Whether the answer to this actual request goes to `origin`, decided after the request was
   * handled (its body is parsed by then). Default: `allows`, decided before it is handled.
   */
  forResponse?(origin: string, ctx: Koa.Context): Promise<boolean>;
}

/** A policy over a fixed table of paths and a fixed list of origins (repository: `CORS_ORIGINS`). */
export function staticCorsPolicy(routes: (path: string) => CorsRoute | undefined, origins: readonly string[]): CorsPolicy {
  const allowed = new Set(origins);
  return { route: routes, allows: async (origin) => allowed.has(origin) };
}

/**
 * The middleware. `ownOrigin`: the service's public origin, whose pages are not cross-origin.
 * A policy that fails (its database is down) allows nothing, and the failure is logged.
 */
export function corsMiddleware(policy: CorsPolicy, options: { ownOrigin?: string; logger?: Logger }): Koa.Middleware {
  const decide = async (what: () => Promise<boolean>): Promise<boolean> => {
    try {
      return await what();
    } catch (err) {
      options.logger?.error({ err }, "CORS policy failed; answering without CORS headers");
      return false;
    }
  };
  return async (ctx, next) => {
    const route = policy.route(ctx.path);
    if (!route) return next();
    const preflight = ctx.method === "OPTIONS" && ctx.get("Access-Control-Request-Method") !== "";
    if (route.access === "open") {
      ctx.set("Access-Control-Allow-Origin", "*");
      if (preflight) return answerPreflight(ctx, route);
      expose(ctx, route);
      return next();
    }
    ctx.vary("Origin");
    const origin = ctx.get("Origin");
    if (!origin || origin === options.ownOrigin) return next();
    const listable = origin !== "null";
    if (preflight) {
      if (!(listable && (await decide(() => policy.allows(origin, ctx.path))))) {
        throw new HttpProblem(403, "origin_not_allowed", "Pages of this origin may not call this endpoint: the preflight is refused.");
      }
      ctx.set("Access-Control-Allow-Origin", origin);
      return answerPreflight(ctx, route);
    }
    if (!policy.forResponse) {
      if (listable && (await decide(() => policy.allows(origin, ctx.path)))) allow(ctx, route, origin);
      return next();
    }
    const forResponse = policy.forResponse.bind(policy);
    try {
      await next();
    } finally {
      // Also when the request failed: the error answer is written after this, with these headers.
      if (listable && (await decide(() => forResponse(origin, ctx)))) allow(ctx, route, origin);
    }
  };
}

function answerPreflight(ctx: Koa.Context, route: CorsRoute): void {
  ctx.set("Access-Control-Allow-Methods", route.methods.join(", "));
  if (route.allowHeaders.length) ctx.set("Access-Control-Allow-Headers", route.allowHeaders.join(", "));
  ctx.set("Access-Control-Max-Age", String(PREFLIGHT_MAX_AGE_SECONDS));
  ctx.status = 204;
}

function allow(ctx: Koa.Context, route: CorsRoute, origin: string): void {
  ctx.set("Access-Control-Allow-Origin", origin);
  expose(ctx, route);
}

function expose(ctx: Koa.Context, route: CorsRoute): void {
  if (route.exposeHeaders.length) ctx.set("Access-Control-Expose-Headers", route.exposeHeaders.join(", "));
}

/** The methods an OpenAPI document's operations use (upper case, in a fixed order): a preflight's `Access-Control-Allow-Methods` for a whole API. */
export function documentMethods(document: { paths?: Record<string, Record<string, unknown>> }): string[] {
  const used = new Set(Object.values(document.paths ?? {}).flatMap((item) => Object.keys(item)));
  return ["get", "put", "post", "delete", "patch"].filter((m) => used.has(m)).map((m) => m.toUpperCase());
}
