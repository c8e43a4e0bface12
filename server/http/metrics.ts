/**
 * `GET /metrics` (X-API-11): the service's Prometheus metrics in the text exposition format. Open
 * like `/health` unless METRICS_TOKEN is set; then only `Authorization: Bearer <METRICS_TOKEN>`
 * (compared in constant time) gets them, anything else 401 with an RFC 6750 challenge.
 */
import type { ServiceMetrics } from "../observability/metrics.ts";
import { bearerToken, safeEqual } from "../security/tokens.ts";
import type { RequestHeaders } from "./handler-types.ts";
import { bearerChallenge } from "./problem.ts";

export const METRICS_REALM = "metrics";

export function metricsHandler(metrics: ServiceMetrics, token: string | undefined) {
  return async (req: { headers: RequestHeaders }) => {
    if (token !== undefined) {
      const sent = bearerToken(req.headers.authorization);
      if (sent === undefined) throw bearerChallenge(METRICS_REALM, "This deployment's metrics need its METRICS_TOKEN as a Bearer token.");
      if (!safeEqual(sent, token)) throw bearerChallenge(METRICS_REALM, "The metrics token is wrong.", "invalid_token");
    }
    return { status: 200 as const, body: await metrics.exposition(), contentType: metrics.contentType };
  };
}
