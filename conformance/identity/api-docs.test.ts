/**
 * The API reference (X-ID-DOC-1): discovery's `service_documentation` answers with a page that
 * renders this service's own OpenAPI document with Redoc, everything from this origin (no CDN:
 * the reference must work on a machine without internet).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { identityTarget, type IdentityTarget } from "../harness/targets.ts";
import { identityApi } from "../harness/api.ts";
import { request } from "../harness/http.ts";

let t: IdentityTarget;
beforeAll(async () => {
  t = await identityTarget();
});
afterAll(async () => t?.close());

/** Every address an HTML page loads or links: src, href and Redoc's spec-url. */
const addressesIn = (html: string) => [...html.matchAll(/\b(?:src|href|spec-url)="([^"]*)"/g)].map((m) => m[1]!);

describe("API reference", () => {
  it("X-ID-DOC-1 the service_documentation of discovery is served: an HTML page whose script and document all come from this origin", async () => {
    const metadata = await identityApi(t).GET("/.well-known/openid-configuration");
    const docsUrl = metadata.data!.service_documentation!;
    expect(docsUrl).toBe(`${t.url}/docs`);
    // The reference and its document are not in the SDK document the typed client is built on: raw.
    const page = await fetch(docsUrl);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toMatch(/^text\/html/);
    const csp = page.headers.get("content-security-policy") ?? "";
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toMatch(/https:|\*/); // nothing from another host, images included
    const html = await page.text();
    const addresses = addressesIn(html);
    expect(addresses).toContain("/openapi.yaml");
    // Same origin only: absolute paths, never another host.
    for (const address of addresses) expect(address).toMatch(/^\/[^/]/);
    const scripts = [...html.matchAll(/<script\b[^>]*\bsrc="([^"]+)"/g)].map((m) => m[1]!);
    expect(scripts.length).toBeGreaterThan(0);
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/); // no inline script: CSP script-src 'self' holds
    for (const src of scripts) {
      const script = await fetch(`${t.url}${src}`);
      expect(script.status).toBe(200);
      expect(script.headers.get("content-type")).toMatch(/^text\/javascript/);
      expect(await script.text()).toContain("Redoc");
    }
  });

  it("X-ID-DOC-1 /openapi.yaml and /openapi.json are this service's own OpenAPI document, the same in both forms", async () => {
    const yamlRes = await fetch(`${t.url}/openapi.yaml`);
    expect(yamlRes.status).toBe(200);
    expect(yamlRes.headers.get("content-type")).toMatch(/^application\/yaml/);
    const fromYaml = parse(await yamlRes.text());
    expect(fromYaml.openapi).toMatch(/^3\./);
    expect(fromYaml.info.title).toBe("Identity Service");
    // It documents what this service answers, the reference itself included.
    for (const path of ["/oauth/token", "/oauth/userinfo", "/.well-known/openid-configuration", "/docs", "/openapi.yaml"])
      expect(fromYaml.paths[path]).toBeDefined();
    const json = await request(t.url, "GET", "/openapi.json");
    expect(json.status).toBe(200);
    expect(json.headers.get("content-type")).toMatch(/^application\/json/);
    expect(json.body).toEqual(fromYaml);
  });

  it("X-ID-DOC-1 like every operation, the reference refuses an unknown query parameter with 400 validation_failed", async () => {
    const res = await request(t.url, "GET", "/docs?utm_source=x");
    expect(res.status).toBe(400);
    expect(res.body.code).toBe("validation_failed");
  });
});
