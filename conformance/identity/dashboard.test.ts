/** X-ID-ADM-1: the administrative dashboard page and its script, as served. */
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { request } from "../harness/http.ts";
import { identityTarget, type IdentityTarget } from "../harness/targets.ts";

// The dashboard's page and script are x-internal, not in the SDK document the typed clients are built on: raw requests.
let target: IdentityTarget;
beforeAll(async () => {
  target = await identityTarget();
});
afterAll(async () => target?.close());

const directives = (csp: string) =>
  new Map(
    csp
      .split(";")
      .map((d) => d.trim().split(/\s+/))
      .map(([name, ...values]) => [name!, values]),
  );

describe("/dashboard", () => {
  it("X-ID-ADM-1 GET /dashboard is an accessible HTML shell with no inline script, loading only /dashboard/app.js, unframeable, never cached", async () => {
    const res = await request(target.url, "GET", "/dashboard");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/html; charset=utf-8/);
    expect(res.headers.get("x-frame-options")).toBe("DENY");
    expect(res.headers.get("referrer-policy")).toBe("no-referrer");
    expect(res.headers.get("cache-control")).toBe("no-store");
    const html = res.text;
    expect(html).toMatch(/^<!doctype html>/i);
    expect(html).toMatch(/<html lang="en">/);
    expect(html).toMatch(/<title>Identity dashboard<\/title>/);
    expect(html).toMatch(/<meta name="viewport"/);
    expect(html).toMatch(/<main[^>]*>/);
    expect(html).toMatch(/role="status"/);
    const scripts = [...html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)];
    expect(scripts).toHaveLength(1);
    expect(scripts[0]![1]).toMatch(/type="module"/);
    expect(scripts[0]![1]).toMatch(/src="\/dashboard\/app.js"/);
    expect(scripts[0]![2]).toBe("");
    expect(html).not.toMatch(/\son[a-z]+=/i); // no inline event handlers
    expect(html).not.toMatch(/\sstyle=/i);

    const csp = directives(res.headers.get("content-security-policy") ?? "");
    expect(csp.get("script-src")).toEqual(["'self'"]);
    expect(csp.get("frame-ancestors")).toEqual(["'none'"]);
    expect(csp.get("base-uri")).toEqual(["'none'"]);
    expect(csp.get("default-src")).toEqual(["'self'"]);
    expect([...csp.values()].flat()).not.toContain("'unsafe-inline'");
    expect([...csp.values()].flat()).not.toContain("'unsafe-eval'");
    // The one inline stylesheet is allowed by its hash, nothing else.
    const style = /<style>([\s\S]*?)<\/style>/.exec(html)![1]!;
    expect(csp.get("style-src")).toEqual([`'sha256-${createHash("sha256").update(style).digest("base64")}'`]);
  });

  it("X-ID-ADM-1 nothing from the authorization response in the URL is reflected into the page", async () => {
    const plain = await request(target.url, "GET", "/dashboard");
    const evil = "<script>alert(1)</script>";
    const res = await request(
      target.url,
      "GET",
      `/dashboard?code=${encodeURIComponent(evil)}&state=${encodeURIComponent(evil)}&iss=x&error=${encodeURIComponent(evil)}&error_description=${encodeURIComponent(evil)}`,
    );
    expect(res.status).toBe(200);
    expect(res.text).toBe(plain.text);
  });

  it("X-ID-ADM-1 /dashboard/app.js is one self-contained JavaScript module (no import from anywhere), cacheable for five minutes", async () => {
    const res = await request(target.url, "GET", "/dashboard/app.js");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/javascript; charset=utf-8/);
    expect(res.headers.get("cache-control")).toBe("public, max-age=300");
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    // It parses as an ES module, and the bundle imports nothing: no CDN, no second request.
    const dir = mkdtempSync(join(tmpdir(), "dashboard-js-"));
    try {
      writeFileSync(join(dir, "app.mjs"), res.text);
      execFileSync(process.execPath, ["--check", join(dir, "app.mjs")]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    expect(res.text).not.toMatch(/^\s*(import|export)\b/m);
  });
  // What the script does (sign-in with PKCE, every edit through the admin API) is proven in
  // Chromium: test/identity/dashboard-browser.test.ts.
});
