/**
 * The operations every service declares alike: `/health` and `/ready` (health.ts), `/metrics`
 * (metrics.ts) and its API reference, `/docs` with its script, `/openapi.yaml` and `/openapi.json`
 * (api-docs.ts, X-API-15). One set per service, which its typed handler map spreads.
 */
import type { Clock } from "../clock.ts";
import type { Readiness } from "../lifecycle.ts";
import type { ServiceMetrics } from "../observability/metrics.ts";
import type { Database } from "../storage/transaction.ts";
import { apiReference } from "./api-docs.ts";
import { healthHandler, readyHandler } from "./health.ts";
import { metricsHandler } from "./metrics.ts";

export interface PlatformHandlerOptions {
  /** The service's name, in the probes' answers. */
  service: string;
  db: Database;
  clock: Clock;
  readiness: Readiness;
  metrics: ServiceMetrics;
  /** METRICS_TOKEN: when set, `/metrics` answers only a Bearer request that carries it. */
  metricsToken: string | undefined;
  /** The reference's page title and the generated document it renders and serves. */
  reference: { title: string; definitionPath: string };
}

export function platformHandlers(o: PlatformHandlerOptions) {
  const reference = apiReference(o.reference);
  return {
    health: healthHandler(o.service, o.db, o.clock),
    ready: readyHandler(o.service, o.db, o.clock, o.readiness),
    metrics: metricsHandler(o.metrics, o.metricsToken),
    apiReference: async () => reference.page(),
    apiReferenceScript: async () => reference.script(),
    openapiYaml: async () => reference.yaml(),
    openapiJson: async () => reference.json(),
  };
}
