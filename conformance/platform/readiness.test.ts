/**
 * X-API-10: every service has a readiness probe beside its liveness probe. While an instance takes
 * traffic `/ready` answers 200; from the moment it starts shutting down it answers 503 `not_ready`
 * (checked on the real process in test/lifecycle/graceful-shutdown.test.ts, which needs a signal).
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { platformWorld, type PlatformWorld } from "../harness/worlds.ts";
import type { EmailTarget, IdentityTarget, RepositoryTarget } from "../harness/targets.ts";
import { emailApi, identityApi, repositoryApi } from "../harness/api.ts";
import { NEEDS, skipOnDeployment } from "../harness/skip.ts";

let rb: RepositoryTarget;
let id: IdentityTarget;
let em: EmailTarget;
let world: PlatformWorld;
beforeAll(async () => {
  ({ repository: rb, identity: id, email: em } = world = await platformWorld());
});
afterAll(async () => world?.close());

/** GET /ready or /health of one service, through its typed client (unauthenticated). */
const probe = (service: "repository" | "identity" | "email", url: string, path: "/ready" | "/health") =>
  service === "repository" ? repositoryApi(url).GET(path) : service === "identity" ? identityApi(url).GET(path) : emailApi(url).GET(path);

it("X-API-10 /ready answers 200 with the service name on every service while it takes traffic, unauthenticated and never cached", async () => {
  for (const [service, url] of [
    ["repository", rb.url],
    ["identity", id.url],
    ["email", em.url],
  ] as const) {
    const res = await probe(service, url, "/ready");
    expect(res.response.status, service).toBe(200);
    expect(res.data, service).toMatchObject({ status: "ready", service });
    expect(Number.isNaN(Date.parse(res.data!.time)), service).toBe(false);
    expect(res.response.headers.get("cache-control"), service).toBe("no-store");
  }
});

it("X-API-10 from the moment an instance starts shutting down /ready answers 503 not_ready on every service (in-process: the state a SIGTERM sets first)", async (ctx) => {
  // Last in the file: the targets stay draining. On a deployment nothing here may shut it down.
  if (!rb.drain || !id.drain || !em.drain) return skipOnDeployment(ctx, NEEDS.service);
  for (const [service, target] of [
    ["repository", rb],
    ["identity", id],
    ["email", em],
  ] as const) {
    target.drain!();
    const res = await probe(service, target.url, "/ready");
    expect(res.response.status, service).toBe(503);
    expect(res.response.headers.get("content-type"), service).toMatch(/^application\/problem\+json/);
    expect(res.error, service).toMatchObject({ status: 503, code: "not_ready" });
    expect((await probe(service, target.url, "/health")).response.status, `${service} stays alive while draining`).toBe(200);
  }
});
