/** RB-6: build agents and their separate token system. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { repositoryWorld } from "../harness/worlds.ts";
import type { RepositoryTarget } from "../harness/targets.ts";
import { decodeJwt, request } from "../harness/http.ts";
import { NEEDS, skipOnDeployment } from "../harness/skip.ts";

let rb: RepositoryTarget;
let userToken: string;
beforeAll(async () => {
  ({ target: rb, token: userToken } = await repositoryWorld({ login: true }));
});
afterAll(async () => rb?.close());

const register = (name = "runner") => request(rb.url, "POST", "/buildagent/register", { token: userToken, json: { name } });
const poll = (token: string) => request(rb.url, "POST", "/buildagent/poll", { token });

describe("build agents", () => {
  it("RB-6 /buildagent/poll requires Authorization: Bearer <AGENT_TOKEN>; a user token is refused there", async () => {
    const missing = await request(rb.url, "POST", "/buildagent/poll");
    expect(missing.status).toBe(401);
    expect(missing.headers.get("www-authenticate")).toBe('Bearer realm="repository"');
    const withUser = await poll(userToken);
    expect(withUser.status).toBe(401);
    expect(withUser.headers.get("www-authenticate")).toMatch(/error="invalid_token"/);
    const agent = await register();
    expect(agent.status).toBe(201);
    // A deployment's user may have builds queued by an earlier run (X-RB-4 leaves one requeued): drain them.
    while ((await poll(agent.body.agentToken)).status === 200);
    expect((await poll(agent.body.agentToken)).status).toBe(204);
  });

  it("RB-6 agent tokens are a separate system: an agent token is refused on user endpoints", async () => {
    const { body } = await register();
    const claims = decodeJwt(body.agentToken);
    expect(claims.payload.aud).toBe("build-agent");
    expect(claims.header.kid).not.toBe(decodeJwt(userToken).header.kid);
    for (const [method, path] of [
      ["GET", "/repository"],
      ["GET", "/auth/me"],
      ["POST", "/buildagent/register"],
    ] as const) {
      const res = await request(rb.url, method, path, { token: body.agentToken, json: method === "POST" ? { name: "x" } : undefined });
      expect(res.status, path).toBe(401);
    }
  });

  it("RB-6 poll hands the owner's oldest queued build to the agent and moves it to running; the agent reports the result", async () => {
    const agent = (await register("ci-1")).body;
    const repo = (await request(rb.url, "POST", "/repository", { token: userToken, json: { name: `svc-${Date.now()}` } })).body;
    const first = (await request(rb.url, "POST", `/repository/${repo.id}/builds`, { token: userToken, json: { ref: "v1.0.0" } })).body;
    rb.clock?.advance(1000);
    await request(rb.url, "POST", `/repository/${repo.id}/builds`, { token: userToken, json: {} });
    const got = await poll(agent.agentToken);
    expect(got.status).toBe(200);
    expect(got.body).toMatchObject({ id: first.id, ref: "v1.0.0", status: "running", agentId: agent.agent.id });
    const done = await request(rb.url, "POST", `/buildagent/builds/${first.id}/result`, {
      token: agent.agentToken,
      json: { status: "succeeded" },
    });
    expect(done.status).toBe(200);
    expect(done.body.status).toBe("succeeded");
    const again = await request(rb.url, "POST", `/buildagent/builds/${first.id}/result`, {
      token: agent.agentToken,
      json: { status: "failed" },
    });
    expect(again.status).toBe(409);
  });

  it("X-RB-5 concurrent polls never hand out one build twice", async () => {
    const agents = await Promise.all([register("a"), register("b"), register("c")]);
    const repo = (await request(rb.url, "POST", "/repository", { token: userToken, json: { name: `race-${Date.now()}` } })).body;
    // Drain anything queued by earlier tests first.
    while ((await poll(agents[0]!.body.agentToken)).status === 200);
    for (let i = 0; i < 5; i++) await request(rb.url, "POST", `/repository/${repo.id}/builds`, { token: userToken, json: {} });
    const results = await Promise.all(Array.from({ length: 12 }, (_, i) => poll(agents[i % 3]!.body.agentToken)));
    const ids = results.filter((r) => r.status === 200).map((r) => r.body.id);
    expect(ids).toHaveLength(5);
    expect(new Set(ids).size).toBe(5);
    expect(results.filter((r) => r.status === 204)).toHaveLength(7);
  });

  it("X-RB-4 deleting an agent revokes its token at once and requeues the build it was running", async () => {
    const agent = (await register("doomed")).body;
    const repo = (await request(rb.url, "POST", "/repository", { token: userToken, json: { name: `rq-${Date.now()}` } })).body;
    const other = (await register("survivor")).body;
    while ((await poll(other.agentToken)).status === 200);
    const build = (await request(rb.url, "POST", `/repository/${repo.id}/builds`, { token: userToken, json: {} })).body;
    expect((await poll(agent.agentToken)).body.id).toBe(build.id);
    const list = await request(rb.url, "GET", "/buildagent/agents", { token: userToken });
    expect(list.body.items.map((a: { id: string }) => a.id)).toContain(agent.agent.id);
    expect((await request(rb.url, "DELETE", `/buildagent/agents/${agent.agent.id}`, { token: userToken })).status).toBe(204);
    const refused = await poll(agent.agentToken);
    expect(refused.status).toBe(401);
    expect(refused.body.detail).toMatch(/revoked/);
    expect((await request(rb.url, "DELETE", `/buildagent/agents/${agent.agent.id}`, { token: userToken })).status).toBe(404);
    expect((await poll(other.agentToken)).body).toMatchObject({ id: build.id, status: "running", agentId: other.agent.id });
  });

  it("X-RB-4 an expired agent token is refused", async (ctx) => {
    if (!rb.clock) return skipOnDeployment(ctx, NEEDS.clock);
    const agent = (await register("old")).body;
    rb.clock.advance(Date.parse(agent.expiresAt) - rb.clock.now().getTime() + 1000);
    expect((await poll(agent.agentToken)).status).toBe(401);
  });
});
