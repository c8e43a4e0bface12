/**
 * The repository service's CORS policy (X-RB-10): pages of the origins in `CORS_ORIGINS` may call
 * every operation of its API, with bearer tokens (never cookies, so no credentials mode); any
 * other origin gets no CORS header and its preflights are 403. The protocol is server/http/cors.ts.
 */
import { readFileSync } from "node:fs";
import { parse } from "yaml";
import { documentMethods, staticCorsPolicy, type CorsPolicy, type CorsRoute } from "../../server/http/cors.ts";
import { definitionPath } from "../../server/definitions.ts";

/** The one rule for every path: the API's methods, bearer tokens and JSON bodies; the headers its answers use read by the page. */
export function repositoryCorsRoute(): CorsRoute {
  const document = parse(readFileSync(definitionPath("repository"), "utf8"));
  return {
    access: "listed",
    methods: documentMethods(document),
    allowHeaders: ["Authorization", "Content-Type"],
    exposeHeaders: ["WWW-Authenticate", "Retry-After", "X-Request-Id"],
  };
}

export function repositoryCorsPolicy(origins: readonly string[]): CorsPolicy {
  const route = repositoryCorsRoute();
  return staticCorsPolicy(() => route, origins);
}
