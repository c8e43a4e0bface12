/**
 * X-API-14 deprecation and sunset: an operation its document marks deprecated (with the dates
 * `x-deprecated-at` and `x-sunset` and the `x-successor` address) answers with `Deprecation`
 * (RFC 9745), `Sunset` (RFC 8594) and `Link: rel="successor-version"` on every response, its
 * errors included; a current operation sends none of them. Checked on the services' own Koa and
 * openapi-backend wiring (server/http/app.ts) with a two-operation document.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pino from "pino";
import type { Document } from "openapi-backend";
import { createServiceApp } from "../../server/http/app.ts";
import { listen, type Listening } from "../../server/http/listen.ts";
import { HttpProblem } from "../../server/http/problem.ts";

const item = (summary: string, extra: Record<string, unknown> = {}) => ({
  summary,
  ...extra,
  security: [{ Token: [] }],
  responses: {
    "200": { description: "OK", content: { "application/json": { schema: { type: "object", properties: { ok: { type: "boolean" } } } } } },
    "401": { description: "No token", content: { "application/problem+json": { schema: { type: "object" } } } },
  },
});

const definition = {
  openapi: "3.0.0",
  info: { title: "Deprecation test", version: "1.0.0" },
  paths: {
    "/old": {
      get: item("Old", {
        operationId: "old",
        deprecated: true,
        "x-deprecated-at": "2026-11-23",
        "x-sunset": "2027-06-01",
        "x-successor": "/new",
      }),
    },
    "/new": { get: item("New", { operationId: "current" }) },
  },
  components: { securitySchemes: { Token: { type: "http", scheme: "bearer" } } },
} as unknown as Document;

let server: Listening;
beforeAll(async () => {
  const app = await createServiceApp({
    name: "deprecation-test",
    definition,
    handlers: { old: async () => ({ status: 200, body: { ok: true } }), current: async () => ({ status: 200, body: { ok: true } }) },
    securityHandlers: {
      Token: async ({ headers }) => {
        if (headers.authorization !== "Bearer t") throw new HttpProblem(401, "unauthorized", "No token.");
        return {};
      },
    },
    realm: "test",
    deps: {},
    logger: pino({ level: "silent" }),
    bodyLimitBytes: 65536,
    validateResponses: true,
  });
  server = await listen(app, "127.0.0.1", 0);
});
afterAll(async () => server?.close());

describe("deprecation headers", () => {
  it("X-API-14 a deprecated operation answers with Deprecation, Sunset and its successor, on success and on errors", async () => {
    for (const authorization of ["Bearer t", undefined]) {
      const res = await fetch(`${server.url}/old`, { headers: authorization ? { authorization } : {} });
      expect(res.status).toBe(authorization ? 200 : 401);
      expect(res.headers.get("deprecation")).toBe(`@${Date.parse("2026-11-23T00:00:00Z") / 1000}`);
      expect(res.headers.get("sunset")).toBe("Tue, 01 Jun 2027 00:00:00 GMT");
      expect(res.headers.get("link")).toBe('</new>; rel="successor-version"');
    }
  });

  it("X-API-14 a current operation sends none of them", async () => {
    const res = await fetch(`${server.url}/new`, { headers: { authorization: "Bearer t" } });
    expect(res.status).toBe(200);
    for (const h of ["deprecation", "sunset", "link"]) expect(res.headers.get(h), h).toBeNull();
  });
});
