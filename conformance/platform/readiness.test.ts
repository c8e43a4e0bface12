/**
 * X-API-10: every service has a readiness probe beside its liveness probe. While an instance takes
 * traffic `/ready` answers 200; from the moment it starts shutting down it answers 503 `not_ready`
 * (checked on the real process in test/graceful-shutdown.test.ts, which needs a signal).
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { emailTarget, identityTarget, repositoryTarget, type EmailTarget, type IdentityTarget, type RepositoryTarget } from "../harness/targets.ts";
import { request } from "../harness/http.ts";

let rb: RepositoryTarget;
let id: IdentityTarget;
let em: EmailTarget;
beforeAll(async () => {
  [rb, id, em] = await Promise.all([repositoryTarget(), identityTarget(), emailTarget()]);
});
afterAll(async () => Promise.all([rb?.close(), id?.close(), em?.close()]));

it("X-API-10 /ready answers 200 with the service name on every service while it takes traffic, unauthenticated and never cached", async () => {
  for (const [service, url] of [["repository", rb.url], ["identity", id.url], ["email", em.url]] as const) {
    const res = await request(url, "GET", "/ready");
    expect(res.status, service).toBe(200);
    expect(res.body, service).toMatchObject({ status: "ready", service });
    expect(Number.isNaN(Date.parse(res.body.time)), service).toBe(false);
    expect(res.headers.get("cache-control"), service).toBe("no-store");
  }
});
