/**
 * The mocks answer CORS as the services' contracts state (scripts/mock-cors.ts), not Prism's
 * allow-everything `--cors`: a page that works on a mock works on the service, and a call the
 * service refuses is refused by the mock too (X-ID-CORS-1, X-RB-10, X-EM-26).
 */
import { freePort } from "../../support/free-port.ts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mockCorsPolicy } from "../../scripts/mock-cors.ts";
import { MOCKS, startMock, type RunningMock } from "../../scripts/prism.ts";

const PAGE = "http://localhost:5173";
const OTHER = "https://elsewhere.example";

let identity: RunningMock;
let identityListed: RunningMock;
let repository: RunningMock;
let email: RunningMock;

const start = async (name: keyof typeof MOCKS, origins: string[]) =>
  startMock(MOCKS[name].file, await freePort(), { quiet: true, cors: mockCorsPolicy(name, origins) });

const preflight = (mock: RunningMock, path: string, origin: string, method: string) =>
  fetch(`${mock.url}${path}`, {
    method: "OPTIONS",
    headers: { origin, "access-control-request-method": method, "access-control-request-headers": "authorization, content-type" },
  });

beforeAll(async () => {
  [identity, identityListed, repository, email] = await Promise.all([
    start("identity", []),
    start("identity", [PAGE]),
    start("repository", [PAGE]),
    start("email", [PAGE]),
  ]);
}, 60_000);
afterAll(async () => {
  await Promise.allSettled([identity, identityListed, repository, email].map((m) => m?.stop()));
});

describe("CORS on the mocks", () => {
  it("X-ID-CORS-1 the identity mock: browser endpoints answer other origins, the administration API is same-origin only", async () => {
    const jwks = await fetch(`${identity.url}/.well-known/jwks.json`, { headers: { origin: OTHER } });
    expect(jwks.status).toBe(200);
    expect(jwks.headers.get("access-control-allow-origin")).toBe("*");

    const pre = await preflight(identity, "/oauth/token", OTHER, "POST");
    expect(pre.status).toBe(204);
    expect(pre.headers.get("access-control-allow-origin")).toBe(OTHER);
    expect(pre.headers.get("access-control-allow-methods")).toBe("POST");
    const token = await fetch(`${identity.url}/oauth/token`, {
      method: "POST",
      headers: { origin: OTHER, "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({
        grant_type: "authorization_code",
        code: "SplxlOBeZQQYbYS6WxSbIA",
        redirect_uri: "https://notes.acme.example/callback",
        client_id: "acme-notes",
        code_verifier: "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk",
      }),
    });
    expect(token.headers.get("access-control-allow-origin")).toBe(OTHER);
    expect(token.headers.get("access-control-allow-credentials")).toBeNull();

    for (const [path, method] of [
      ["/api/applications", "GET"],
      ["/oauth/introspect", "POST"],
    ] as const) {
      const admin = await preflight(identity, path, OTHER, method);
      expect(admin.status, path).toBe(405);
      expect(admin.headers.get("access-control-allow-origin"), path).toBeNull();
    }
    const list = await fetch(`${identity.url}/api/applications`, { headers: { origin: OTHER, authorization: "Bearer x" } });
    expect(list.headers.get("access-control-allow-origin")).toBeNull();
  }, 30_000);

  it("X-ID-CORS-1 the identity mock with CORS_ORIGINS accepts only those origins at the client endpoints", async () => {
    expect((await preflight(identityListed, "/oauth/userinfo", PAGE, "GET")).status).toBe(204);
    const refused = await preflight(identityListed, "/oauth/userinfo", OTHER, "GET");
    expect(refused.status).toBe(403);
    expect(refused.headers.get("access-control-allow-origin")).toBeNull();
    expect(await refused.json()).toMatchObject({ status: 403, code: "origin_not_allowed" });
  });

  it("X-RB-10 the repository mock follows CORS_ORIGINS, as the service", async () => {
    const pre = await preflight(repository, "/repository", PAGE, "GET");
    expect(pre.status).toBe(204);
    expect(pre.headers.get("access-control-allow-methods")).toBe("GET, POST, DELETE");
    const health = await fetch(`${repository.url}/health`, { headers: { origin: PAGE } });
    expect(health.status).toBe(200);
    expect(health.headers.get("access-control-allow-origin")).toBe(PAGE);
    expect((await preflight(repository, "/repository", OTHER, "GET")).status).toBe(403);
  });

  it("X-EM-26 the email mock answers no browser: a preflight is 405, whatever CORS_ORIGINS says", async () => {
    const pre = await preflight(email, "/v1/emails", PAGE, "POST");
    expect(pre.status).toBe(405);
    expect(pre.headers.get("access-control-allow-origin")).toBeNull();
    const health = await fetch(`${email.url}/health`, { headers: { origin: PAGE } });
    expect(health.headers.get("access-control-allow-origin")).toBeNull();
  });
});
