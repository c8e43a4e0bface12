/** RB-5: the protected /repository resource. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { repositoryTarget, type RepositoryTarget } from "../harness/targets.ts";
import { request } from "../harness/http.ts";
import { NEEDS, skipOnDeployment } from "../harness/skip.ts";

let rb: RepositoryTarget;
let token: string;
beforeAll(async () => {
  rb = await repositoryTarget();
  token = (await request(rb.url, "POST", "/auth/login", { json: rb.user })).body.accessToken;
});
afterAll(async () => rb?.close());

describe("/repository", () => {
  it("RB-5 /repository requires Authorization: Bearer <ACCESS_TOKEN>: missing, malformed and invalid tokens get 401 with an RFC 6750 challenge", async () => {
    const missing = await request(rb.url, "GET", "/repository");
    expect(missing.status).toBe(401);
    expect(missing.headers.get("www-authenticate")).toBe('Bearer realm="repository"');
    expect(missing.body).toMatchObject({ status: 401, code: "unauthorized" });
    for (const header of ["Bearer", "Bearer not-a-jwt", "Basic dXNlcjpwYXNz", `Bearer ${token}x`, `Token ${token}`]) {
      const res = await request(rb.url, "GET", "/repository", { headers: { authorization: header } });
      expect(res.status, header).toBe(401);
      expect(res.headers.get("www-authenticate")).toMatch(/^Bearer realm="repository"/);
    }
    const ok = await request(rb.url, "GET", "/repository", { token });
    expect(ok.status).toBe(200);
  });

  it("RB-5 with a valid token the user creates, lists and reads repositories and queues builds", async () => {
    const name = `app-${Date.now()}`;
    const created = await request(rb.url, "POST", "/repository", { token, json: { name, description: "demo" } });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ name, description: "demo", defaultBranch: "main" });
    const list = await request(rb.url, "GET", "/repository?page=1&pageSize=100", { token });
    expect(list.body).toMatchObject({ page: 1, pageSize: 100 });
    expect(list.body.items.map((r: { id: string }) => r.id)).toContain(created.body.id);
    const one = await request(rb.url, "GET", `/repository/${created.body.id}`, { token });
    expect(one.body).toEqual(created.body);
    const build = await request(rb.url, "POST", `/repository/${created.body.id}/builds`, { token, json: {} });
    expect(build.status).toBe(201);
    expect(build.body).toMatchObject({ repositoryId: created.body.id, repositoryName: name, ref: "main", status: "queued" });
    const builds = await request(rb.url, "GET", `/repository/${created.body.id}/builds`, { token });
    expect(builds.body).toMatchObject({ totalCount: 1, page: 1, pageSize: 20 });
  });

  it("X-RB-7 repositories are private: another user's repository is 404, a duplicate name is 409", async (ctx) => {
    if (!rb.createUser) return skipOnDeployment(ctx, NEEDS.ownUsers);
    const other = await rb.createUser();
    const otherToken = (await request(rb.url, "POST", "/auth/login", { json: other })).body.accessToken;
    const mine = await request(rb.url, "POST", "/repository", { token, json: { name: `private-${Date.now()}` } });
    expect((await request(rb.url, "GET", `/repository/${mine.body.id}`, { token: otherToken })).status).toBe(404);
    expect((await request(rb.url, "POST", `/repository/${mine.body.id}/builds`, { token: otherToken, json: {} })).status).toBe(404);
    const dup = await request(rb.url, "POST", "/repository", { token, json: { name: mine.body.name } });
    expect(dup.status).toBe(409);
    expect(dup.body.code).toBe("conflict");
  });

  it("X-API-1 paging: page and pageSize are validated (page ≥ 1, pageSize 1-100) and a page past the end is empty", async () => {
    for (const q of ["page=0", "pageSize=0", "pageSize=101", "page=abc"]) {
      const res = await request(rb.url, "GET", `/repository?${q}`, { token });
      expect(res.status, q).toBe(400);
      expect(res.body.errors[0].field).toMatch(/^query\./);
    }
    const far = await request(rb.url, "GET", "/repository?page=999", { token });
    expect(far.status).toBe(200);
    expect(far.body.items).toEqual([]);
  });
});
