/**
 * X-RB-10: browser pages of the origins in `CORS_ORIGINS` call the repository API; no other
 * origin does. Against a deployment, name one of its listed origins in
 * CONFORMANCE_REPOSITORY_CORS_ORIGIN (without it, the tests that need one are skipped).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { repositoryWorld } from "../harness/worlds.ts";
import { request } from "../harness/http.ts";
import { repositoryTarget, type RepositoryTarget } from "../harness/targets.ts";
import { NEEDS, skipOnDeployment } from "../harness/skip.ts";

const LISTED = process.env.CONFORMANCE_REPOSITORY_CORS_ORIGIN ?? "https://builds-ui.example";
const UNLISTED = "https://unlisted.example";

let rb: RepositoryTarget;
/** The same service with CORS_ORIGINS unset (in-process only). */
let plain: RepositoryTarget | undefined;
let token = "";
const external = Boolean(process.env.CONFORMANCE_REPOSITORY_URL);

const preflight = (url: string, path: string, origin: string, method: string) =>
  request(url, "OPTIONS", path, {
    headers: { origin, "access-control-request-method": method, "access-control-request-headers": "authorization,content-type" },
  });
const allowOrigin = (res: { headers: Headers }) => res.headers.get("access-control-allow-origin");

beforeAll(async () => {
  ({ target: rb, token } = await repositoryWorld({ env: { CORS_ORIGINS: `${LISTED}, http://localhost:5173` }, login: true }));
  if (!external) plain = await repositoryTarget();
});
afterAll(async () => {
  await plain?.close();
  await rb?.close();
});

describe("CORS on the repository API (X-RB-10)", () => {
  it("X-RB-10 a preflight from a listed origin is 204 with that exact origin, the API's methods, Authorization and Content-Type, one hour", async (ctx) => {
    if (external && !process.env.CONFORMANCE_REPOSITORY_CORS_ORIGIN) return skipOnDeployment(ctx, NEEDS.corsOrigin);
    for (const [path, method] of [
      ["/auth/login", "POST"],
      ["/repository", "GET"],
      ["/buildagent/agents/3fa85f64-5717-4562-b3fc-2c963f66afa6", "DELETE"],
    ] as const) {
      const res = await preflight(rb.url, path, LISTED, method);
      expect(res.status, path).toBe(204);
      expect(allowOrigin(res), path).toBe(LISTED);
      expect(res.headers.get("access-control-allow-methods")).toBe("GET, POST, DELETE");
      expect(res.headers.get("access-control-allow-headers")).toBe("Authorization, Content-Type");
      expect(res.headers.get("access-control-max-age")).toBe("3600");
      expect(res.headers.get("access-control-allow-credentials")).toBeNull();
      expect(res.headers.get("vary") ?? "").toMatch(/\borigin\b/i);
    }
  });

  it("X-RB-10 answers to a listed origin carry it, errors included, with WWW-Authenticate, Retry-After and X-Request-Id readable", async (ctx) => {
    if (external && !process.env.CONFORMANCE_REPOSITORY_CORS_ORIGIN) return skipOnDeployment(ctx, NEEDS.corsOrigin);
    const login = await request(rb.url, "POST", "/auth/login", { json: rb.user, headers: { origin: LISTED } });
    expect(login.status).toBe(200);
    expect(allowOrigin(login)).toBe(LISTED);
    expect(login.headers.get("access-control-expose-headers")).toBe("WWW-Authenticate, Retry-After, X-Request-Id");
    const list = await request(rb.url, "GET", "/repository", { token, headers: { origin: LISTED } });
    expect(list.status).toBe(200);
    expect(allowOrigin(list)).toBe(LISTED);
    const denied = await request(rb.url, "GET", "/repository", { headers: { origin: LISTED } });
    expect(denied.status).toBe(401);
    expect(allowOrigin(denied)).toBe(LISTED);
    const bad = await request(rb.url, "POST", "/repository", { token, json: { nope: 1 }, headers: { origin: LISTED } });
    expect(bad.status).toBe(400);
    expect(allowOrigin(bad)).toBe(LISTED);
  });

  it("X-RB-10 an unlisted origin: its preflight is 403 origin_not_allowed, and no answer carries a CORS header", async () => {
    for (const origin of [UNLISTED, "null", `${LISTED}:8443`, `${LISTED}/`]) {
      const pre = await preflight(rb.url, "/repository", origin, "GET");
      expect(pre.status, origin).toBe(403);
      expect(pre.body).toMatchObject({ status: 403, code: "origin_not_allowed" });
      expect(allowOrigin(pre), origin).toBeNull();
      const res = await request(rb.url, "GET", "/repository", { token, headers: { origin } });
      expect(res.status).toBe(200);
      expect(allowOrigin(res), origin).toBeNull();
      expect(res.headers.get("vary") ?? "").toMatch(/\borigin\b/i);
    }
  });

  it("X-RB-10 with CORS_ORIGINS unset (the default) the API is same-origin only: every preflight is 403 and no answer carries a CORS header", async (ctx) => {
    if (!plain) return skipOnDeployment(ctx, NEEDS.configuration); // a deployment's configuration cannot be changed from here
    for (const origin of [LISTED, "http://localhost:5173"]) {
      const pre = await preflight(plain.url, "/auth/login", origin, "POST");
      expect(pre.status).toBe(403);
      expect(allowOrigin(pre)).toBeNull();
      const login = await request(plain.url, "POST", "/auth/login", { json: plain.user, headers: { origin } });
      expect(login.status).toBe(200);
      expect(allowOrigin(login)).toBeNull();
    }
  });
});
