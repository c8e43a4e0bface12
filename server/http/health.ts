/**
 * The probes every service has: `/health` (liveness: 200 when the database answers) and `/ready`
 * (readiness, X-API-10: 200 while the service takes traffic, 503 from the moment it starts
 * draining for a shutdown or when its database does not answer). Neither needs the other: a
 * draining instance is alive, and must not be restarted, while it finishes its requests.
 */
import type { Clock } from "../clock.ts";
import type { Readiness } from "../lifecycle.ts";
import type { Database } from "../storage/db.ts";
import { HttpProblem } from "./problem.ts";

export function healthHandler(service: string, db: Database, clock: Clock) {
  return async () => {
    await db.raw("select 1");
    return { status: 200 as const, body: { status: "ok" as const, service, time: clock.now().toISOString() } };
  };
}

export function readyHandler(service: string, db: Database, clock: Clock, readiness: Readiness) {
  return async () => {
    if (readiness.draining) throw new HttpProblem(503, "not_ready", "This instance is shutting down: send requests to another one.");
    try {
      await db.raw("select 1");
    } catch {
      throw new HttpProblem(503, "not_ready", "This instance cannot reach its database.");
    }
    return { status: 200 as const, body: { status: "ready" as const, service, time: clock.now().toISOString() } };
  };
}
