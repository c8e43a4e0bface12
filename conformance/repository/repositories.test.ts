/** RB-5: the protected /repository resource. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRepository } from "../harness/repository-fixtures.ts";
import { repositoryLogin, repositoryWorld, type RepositoryWorld } from "../harness/worlds.ts";
import type { RepositoryTarget } from "../harness/targets.ts";
import { request } from "../harness/http.ts";
import { NEEDS, skipOnDeployment } from "../harness/skip.ts";

let rb: RepositoryTarget;
let token: string;
/** Typed clients: the user's token by default. */
let api: RepositoryWorld["api"];
beforeAll(async () => {
  ({ target: rb, token, api } = await repositoryWorld({ login: true }));
});
afterAll(async () => rb?.close());

describe("/repository", () => {
  it("RB-5 /repository requires Authorization: Bearer <ACCESS_TOKEN>: missing, malformed and invalid tokens get 401 with an RFC 6750 challenge", async () => {
    // Missing and malformed Authorization headers: raw, on purpose.
    const missing = await request(rb.url, "GET", "/repository");
    expect(missing.status).toBe(401);
    expect(missing.headers.get("www-authenticate")).toBe('Bearer realm="repository"');
    expect(missing.body).toMatchObject({ status: 401, code: "unauthorized" });
    for (const header of ["Bearer", "Bearer not-a-jwt", "Basic dXNlcjpwYXNz", `Bearer ${token}x`, `Token ${token}`]) {
      const res = await request(rb.url, "GET", "/repository", { headers: { authorization: header } });
      expect(res.status, header).toBe(401);
      expect(res.headers.get("www-authenticate")).toMatch(/^Bearer realm="repository"/);
    }
    const ok = await api().GET("/repository");
    expect(ok.response.status).toBe(200);
  });

  it("RB-5 with a valid token the user creates, lists and reads repositories and queues builds", async () => {
    const name = `app-${Date.now()}`;
    const created = await api().POST("/repository", { body: { name, description: "demo" } });
    expect(created.response.status).toBe(201);
    expect(created.data).toMatchObject({ name, description: "demo", defaultBranch: "main" });
    const path = { repositoryId: created.data!.id };
    const list = await api().GET("/repository", { params: { query: { page: 1, pageSize: 100 } } });
    expect(list.data).toMatchObject({ page: 1, pageSize: 100 });
    expect(list.data!.items.map((r) => r.id)).toContain(path.repositoryId);
    const one = await api().GET("/repository/{repositoryId}", { params: { path } });
    expect(one.data).toEqual(created.data);
    const build = await api().POST("/repository/{repositoryId}/builds", { params: { path }, body: {} });
    expect(build.response.status).toBe(201);
    expect(build.data).toMatchObject({ repositoryId: path.repositoryId, repositoryName: name, ref: "main", status: "queued" });
    const builds = await api().GET("/repository/{repositoryId}/builds", { params: { path } });
    expect(builds.data).toMatchObject({ totalCount: 1, page: 1, pageSize: 20 });
  });

  it("X-RB-7 repositories are private: another user's repository is 404, a duplicate name is 409", async (ctx) => {
    if (!rb.createUser) return skipOnDeployment(ctx, NEEDS.ownUsers);
    const other = await rb.createUser();
    const otherToken = await repositoryLogin(rb, other);
    const mine = await createRepository(api(), `private-${Date.now()}`);
    const path = { repositoryId: mine.id };
    expect((await api(otherToken).GET("/repository/{repositoryId}", { params: { path } })).response.status).toBe(404);
    expect((await api(otherToken).POST("/repository/{repositoryId}/builds", { params: { path }, body: {} })).response.status).toBe(404);
    const dup = await api().POST("/repository", { body: { name: mine.name } });
    expect(dup.response.status).toBe(409);
    expect(dup.error?.code).toBe("conflict");
  });

  it("X-API-1 paging: page and pageSize are validated (page ≥ 1, pageSize 1-100) and a page past the end is empty", async () => {
    // Out of range or not a number: outside the contract, raw.
    for (const q of ["page=0", "pageSize=0", "pageSize=101", "page=abc"]) {
      const res = await request(rb.url, "GET", `/repository?${q}`, { token });
      expect(res.status, q).toBe(400);
      expect(res.body.errors[0].field).toMatch(/^query\./);
    }
    const far = await api().GET("/repository", { params: { query: { page: 999 } } });
    expect(far.response.status).toBe(200);
    expect(far.data!.items).toEqual([]);
  });
});
