/**
 * X-API-15: every service serves its own API reference: Redoc at `/docs` (script and document from
 * the service's own origin, no CDN) rendering its OpenAPI document, which it serves as
 * `/openapi.yaml` and `/openapi.json`. Identity's (X-ID-DOC-1) is checked in
 * conformance/identity/api-docs.test.ts; here the repository and email services.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { emailTarget, repositoryTarget, type EmailTarget, type RepositoryTarget } from "../harness/targets.ts";
import { request } from "../harness/http.ts";

// The reference and the documents are x-internal, not in the SDK documents the typed clients are built on: raw requests.
let rb: RepositoryTarget;
let em: EmailTarget;
beforeAll(async () => {
  [rb, em] = await Promise.all([repositoryTarget(), emailTarget()]);
});
afterAll(async () => Promise.all([rb?.close(), em?.close()]));

const services = () =>
  [
    {
      service: "repository",
      url: rb.url,
      title: "Repository and Build Service",
      paths: ["/auth/login", "/repository", "/buildagent/poll"],
    },
    { service: "email", url: em.url, title: "Email Service", paths: ["/v1/emails", "/v1/webhooks", "/v1/suppressions"] },
  ] as const;

describe("API reference of every service", () => {
  it("X-API-15 /docs is an HTML page whose scripts and document all come from the service's own origin, under a CSP that says so", async () => {
    for (const { service, url } of services()) {
      const page = await fetch(`${url}/docs`);
      expect(page.status, service).toBe(200);
      expect(page.headers.get("content-type"), service).toMatch(/^text\/html/);
      const csp = page.headers.get("content-security-policy") ?? "";
      expect(csp, service).toContain("script-src 'self'");
      expect(csp, service).toContain("frame-ancestors 'none'");
      expect(csp, service).not.toMatch(/https?:|\*/);
      const html = await page.text();
      const addresses = [...html.matchAll(/\b(?:src|href|spec-url)="([^"]*)"/g)].map((m) => m[1]!);
      expect(addresses, service).toContain("/openapi.yaml");
      for (const address of addresses) expect(address, service).toMatch(/^\/[^/]/);
      expect(html, service).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
      const script = await fetch(`${url}/docs/redoc.standalone.js`);
      expect(script.status, service).toBe(200);
      expect(script.headers.get("content-type"), service).toMatch(/^text\/javascript/);
      expect(await script.text(), service).toContain("Redoc");
    }
  });

  it("X-API-15 /openapi.yaml and /openapi.json are the service's own generated document, the same in both forms, the reference itself included", async () => {
    for (const { service, url, title, paths } of services()) {
      const yamlRes = await fetch(`${url}/openapi.yaml`);
      expect(yamlRes.status, service).toBe(200);
      expect(yamlRes.headers.get("content-type"), service).toMatch(/^application\/yaml/);
      const fromYaml = parse(await yamlRes.text());
      expect(fromYaml.openapi, service).toMatch(/^3\.0\./);
      expect(fromYaml.info.title, service).toBe(title);
      for (const path of [...paths, "/docs", "/openapi.yaml", "/openapi.json"])
        expect(fromYaml.paths[path], `${service} ${path}`).toBeDefined();
      const json = await request(url, "GET", "/openapi.json");
      expect(json.status, service).toBe(200);
      expect(json.headers.get("content-type"), service).toMatch(/^application\/json/);
      expect(json.body, service).toEqual(fromYaml);
    }
  });

  it("X-API-15 the reference needs no credentials, and like every operation refuses an unknown query parameter with 400 validation_failed", async () => {
    for (const { service, url } of services()) {
      for (const path of ["/docs", "/docs/redoc.standalone.js", "/openapi.yaml", "/openapi.json"]) {
        const res = await request(url, "GET", `${path}?utm_source=x`);
        expect(res.status, `${service} ${path}`).toBe(400);
        expect(res.body.code, `${service} ${path}`).toBe("validation_failed");
      }
    }
  });
});
