/** RB-6: build agents and their separate token system. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SignJWT, generateKeyPair } from "jose";
import { createRepository, queueBuild, registerAgent } from "../harness/repository-fixtures.ts";
import { repositoryWorld, type RepositoryWorld } from "../harness/worlds.ts";
import type { RepositoryTarget } from "../harness/targets.ts";
import { decodeJwt, request } from "../harness/http.ts";
import { NEEDS, skipOnDeployment } from "../harness/skip.ts";

let rb: RepositoryTarget;
let userToken: string;
/** Typed clients: the user's token by default. */
let api: RepositoryWorld["api"];
beforeAll(async () => {
  ({ target: rb, token: userToken, api } = await repositoryWorld({ login: true }));
});
afterAll(async () => rb?.close());

/** An agent polls with its token. */
const poll = (agentToken: string) => api(agentToken).POST("/buildagent/poll");
/** A poll with a token that must be refused (a user's, a revoked or an expired agent's): raw, on purpose. */
const refusedPoll = (token: string) => request(rb.url, "POST", "/buildagent/poll", { token });

describe("build agents", () => {
  it("RB-6 /buildagent/poll requires Authorization: Bearer <AGENT_TOKEN>; a user token is refused there", async () => {
    const missing = await request(rb.url, "POST", "/buildagent/poll");
    expect(missing.status).toBe(401);
    expect(missing.headers.get("www-authenticate")).toBe('Bearer realm="repository"');
    const withUser = await refusedPoll(userToken);
    expect(withUser.status).toBe(401);
    expect(withUser.headers.get("www-authenticate")).toMatch(/error="invalid_token"/);
    const agent = await api().POST("/buildagent/register", { body: { name: "runner" } });
    expect(agent.response.status).toBe(201);
    // A deployment's user may have builds queued by an earlier run (X-RB-4 leaves one requeued): drain them.
    while ((await poll(agent.data!.agentToken)).response.status === 200);
    expect((await poll(agent.data!.agentToken)).response.status).toBe(204);
  });

  it("RB-6 agent tokens are a separate system: an agent token is refused on user endpoints", async () => {
    const body = await registerAgent(api(), "runner");
    const claims = decodeJwt(body.agentToken);
    expect(claims.payload.aud).toBe("build-agent");
    expect(claims.header.kid).not.toBe(decodeJwt(userToken).header.kid);
    for (const [method, path] of [
      ["GET", "/repository"],
      ["GET", "/auth/me"],
      ["POST", "/buildagent/register"],
    ] as const) {
      // An agent token where a user's is required: raw, on purpose.
      const res = await request(rb.url, method, path, { token: body.agentToken, json: method === "POST" ? { name: "x" } : undefined });
      expect(res.status, path).toBe(401);
    }
  });

  it("X-RB-13 a token of another issuer, or a user's, is refused on agent operations saying where agent tokens come from (POST /buildagent/register); an agent token on a user operation says to sign in", async () => {
    const { privateKey } = await generateKeyPair("RS256");
    const foreign = await new SignJWT({})
      .setProtectedHeader({ alg: "RS256", kid: "identity-key-2026-11", typ: "at+jwt" })
      .setIssuer("https://identity.example.com")
      .setAudience("build-agent")
      .setSubject("agent-1")
      .setIssuedAt()
      .setExpirationTime("1h")
      .sign(privateKey);
    for (const token of [foreign, userToken]) {
      const res = await refusedPoll(token);
      expect(res.status).toBe(401);
      expect(res.body).toMatchObject({ code: "invalid_token" });
      expect(res.body.detail).toMatch(/not an agent token of this service.*POST \/buildagent\/register/);
    }
    const garbled = await refusedPoll("not-a-jwt");
    expect(garbled.body.detail).toBe("The agent token is malformed or its signature is invalid.");
    const agent = await registerAgent(api(), "misplaced");
    // An agent token where a user's is required: raw, on purpose.
    const onUser = await request(rb.url, "GET", "/repository", { token: agent.agentToken });
    expect(onUser.status).toBe(401);
    expect(onUser.body.detail).toMatch(/not a user token of this service.*POST \/auth\/login/);
  });

  it("RB-6 poll hands the owner's oldest queued build to the agent and moves it to running; the agent reports the result", async () => {
    const agent = await registerAgent(api(), "ci-1");
    const repo = await createRepository(api(), `svc-${Date.now()}`);
    const first = await queueBuild(api(), repo.id, "v1.0.0");
    rb.clock?.advance(1000);
    await queueBuild(api(), repo.id);
    const got = await poll(agent.agentToken);
    expect(got.response.status).toBe(200);
    expect(got.data).toMatchObject({ id: first.id, ref: "v1.0.0", status: "running", agentId: agent.agent.id });
    const path = { buildId: first.id };
    const done = await api(agent.agentToken).POST("/buildagent/builds/{buildId}/result", {
      params: { path },
      body: { status: "succeeded" },
    });
    expect(done.response.status).toBe(200);
    expect(done.data!.status).toBe("succeeded");
    const again = await api(agent.agentToken).POST("/buildagent/builds/{buildId}/result", { params: { path }, body: { status: "failed" } });
    expect(again.response.status).toBe(409);
  });

  it("X-RB-5 concurrent polls never hand out one build twice", async () => {
    const agents = await Promise.all(["a", "b", "c"].map((name) => registerAgent(api(), name)));
    const repo = await createRepository(api(), `race-${Date.now()}`);
    // Drain anything queued by earlier tests first.
    while ((await poll(agents[0]!.agentToken)).response.status === 200);
    for (let i = 0; i < 5; i++) await queueBuild(api(), repo.id);
    const results = await Promise.all(Array.from({ length: 12 }, (_, i) => poll(agents[i % 3]!.agentToken)));
    const ids = results.filter((r) => r.response.status === 200).map((r) => r.data!.id);
    expect(ids).toHaveLength(5);
    expect(new Set(ids).size).toBe(5);
    expect(results.filter((r) => r.response.status === 204)).toHaveLength(7);
  });

  it("X-RB-4 deleting an agent revokes its token at once and requeues the build it was running", async () => {
    const agent = await registerAgent(api(), "doomed");
    const repo = await createRepository(api(), `rq-${Date.now()}`);
    const other = await registerAgent(api(), "survivor");
    while ((await poll(other.agentToken)).response.status === 200);
    const build = await queueBuild(api(), repo.id);
    expect((await poll(agent.agentToken)).data!.id).toBe(build.id);
    const list = await api().GET("/buildagent/agents");
    expect(list.data!.items.map((a) => a.id)).toContain(agent.agent.id);
    const deleteAgent = () => api().DELETE("/buildagent/agents/{agentId}", { params: { path: { agentId: agent.agent.id } } });
    expect((await deleteAgent()).response.status).toBe(204);
    const refused = await refusedPoll(agent.agentToken);
    expect(refused.status).toBe(401);
    expect(refused.body.detail).toMatch(/revoked/);
    expect((await deleteAgent()).response.status).toBe(404);
    expect((await poll(other.agentToken)).data).toMatchObject({ id: build.id, status: "running", agentId: other.agent.id });
  });

  it("X-RB-4 an expired agent token is refused", async (ctx) => {
    if (!rb.clock) return skipOnDeployment(ctx, NEEDS.clock);
    const agent = await registerAgent(api(), "old");
    rb.clock.advance(Date.parse(agent.expiresAt) - rb.clock.now().getTime() + 1000);
    expect((await refusedPoll(agent.agentToken)).status).toBe(401);
  });
});
