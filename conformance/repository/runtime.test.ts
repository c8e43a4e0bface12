/** X-API-*: how every service answers requests that break the contract (checked on the repository service). */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RepositoryApi } from "../harness/api.ts";
import { createRepository } from "../harness/repository-fixtures.ts";
import { repositoryWorld } from "../harness/worlds.ts";
import type { RepositoryTarget } from "../harness/targets.ts";
import { request } from "../harness/http.ts";

let rb: RepositoryTarget;
let token: string;
/** A typed client with the user's token. */
let api: RepositoryApi;
beforeAll(async () => {
  const world = await repositoryWorld({ login: true });
  ({ target: rb, token } = world);
  api = world.api();
});
afterAll(async () => rb?.close());

const expectProblem = (res: { status: number; headers: Headers; body: any }, status: number, code: string) => {
  expect(res.status).toBe(status);
  expect(res.headers.get("content-type")).toMatch(/^application\/problem\+json/);
  expect(res.body).toMatchObject({ type: "about:blank", status, code });
  expect(typeof res.body.title).toBe("string");
};

describe("requests that break the contract", () => {
  it("X-API-1 a validation failure is a 400 naming every offending field, unknown fields included", async () => {
    const res = await request(rb.url, "POST", "/auth/login", { json: { email: "not-an-email", admin: true } });
    expectProblem(res, 400, "validation_failed");
    expect(res.body.errors).toEqual(
      expect.arrayContaining([
        { field: "body.email", message: 'must match format "email"' },
        { field: "body.password", message: "is required" },
        { field: "body.admin", message: "is not a known field" },
      ]),
    );
    const wrongType = await request(rb.url, "POST", "/repository", { token, json: { name: 42 } });
    expectProblem(wrongType, 400, "validation_failed");
    expect(wrongType.body.errors[0].field).toBe("body.name");
  });

  it("X-API-2 malformed JSON is a 400 and nothing is written", async () => {
    const res = await request(rb.url, "POST", "/repository", {
      token,
      body: '{"name": "x"',
      headers: { "content-type": "application/json" },
    });
    expectProblem(res, 400, "malformed_json");
    const list = await api.GET("/repository");
    expect(list.data!.items.map((r) => r.name)).not.toContain("x");
  });

  it("X-API-3 an unknown path is 404 and a wrong method is 405 with Allow", async () => {
    expectProblem(await request(rb.url, "GET", "/no/such/path"), 404, "not_found");
    const res = await request(rb.url, "DELETE", "/auth/login");
    expectProblem(res, 405, "method_not_allowed");
    expect(res.headers.get("allow")).toBe("POST");
  });

  it("X-API-4 a body in a content type the operation does not take is 415", async () => {
    const res = await request(rb.url, "POST", "/auth/login", { body: "email=a@b.c&password=x", headers: { "content-type": "text/plain" } });
    expectProblem(res, 415, "unsupported_media_type");
  });

  it("X-API-5 a body over 64 KiB is 413 and the service keeps serving", async () => {
    // A password past the contract's 1024 characters: raw.
    const res = await request(rb.url, "POST", "/auth/login", { json: { email: "a@b.c", password: "x".repeat(70_000) } });
    expectProblem(res, 413, "payload_too_large");
    expect((await api.GET("/health")).response.status).toBe(200);
  });

  it("X-API-7 text containing the NUL character is refused with 400 on every storage", async () => {
    // The contract's patterns forbid U+0000: raw.
    const res = await request(rb.url, "POST", "/repository", { token, json: { name: "nul-test", description: "a\u0000b" } });
    expectProblem(res, 400, "validation_failed");
    expect(res.body.errors).toEqual([{ field: "body.description", message: "must not contain the NUL character (U+0000)" }]);
    const reg = await request(rb.url, "POST", "/buildagent/register", { token, json: { name: "\u0000" } });
    expectProblem(reg, 400, "validation_failed");
  });

  it("X-API-1 a required body that is missing is a 400, whatever the content type says", async () => {
    for (const headers of [{}, { "content-type": "application/json" }] as Array<Record<string, string>>) {
      const res = await request(rb.url, "POST", "/auth/login", { headers });
      expectProblem(res, 400, "validation_failed");
    }
  });

  it("RB-5 a build queued without a body builds the repository's default branch", async () => {
    const repo = await createRepository(api, `nobody-${Date.now()}`, { defaultBranch: "trunk" });
    const res = await api.POST("/repository/{repositoryId}/builds", { params: { path: { repositoryId: repo.id } } });
    expect(res.response.status).toBe(201);
    expect(res.data!.ref).toBe("trunk");
  });

  it("X-API-6 health answers 200 with the service name", async () => {
    const res = await api.GET("/health");
    expect(res.response.status).toBe(200);
    expect(res.data).toMatchObject({ status: "ok", service: "repository" });
  });
});
