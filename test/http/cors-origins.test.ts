/**
 * Origin lists compared with a browser's `Origin` as exact strings (server/origins.ts):
 * `CORS_ORIGINS` (X-RB-10) and an application's `allowedOrigins` (X-ID-CORS-2) accept only the
 * form browsers send, so that no listed origin can silently never match.
 */
import { describe, expect, it } from "vitest";
import { ConfigError } from "../../server/config.ts";
import { loadConfig } from "../../app/load-config.ts";
import { originProblem } from "../../server/origins.ts";

describe("origin syntax", () => {
  it("X-RB-10 X-ID-CORS-2 an origin is accepted exactly in its serialised form, anything else says which form to use", () => {
    for (const ok of [
      "https://app.example.com",
      "http://localhost:5173",
      "https://app.example.com:8443",
      "http://[::1]:3000",
      "https://xn--bcher-kva.example",
    ]) {
      expect(originProblem(ok), ok).toBeUndefined();
    }
    expect(originProblem("https://App.Example.com")).toContain('"https://app.example.com"');
    expect(originProblem("https://app.example.com/")).toContain('"https://app.example.com"');
    expect(originProblem("https://app.example.com:443")).toContain('"https://app.example.com"');
    expect(originProblem("https://bücher.example")).toContain('"https://xn--bcher-kva.example"');
    expect(originProblem("app.example.com")).toMatch(/must be an origin/);
    expect(originProblem("ftp://files.example.com")).toMatch(/http or https/);
    expect(originProblem("http://app.example.com")).toBeUndefined();
    expect(originProblem("http://app.example.com", { loopbackHttpOnly: true })).toMatch(/https/);
    expect(originProblem("http://127.0.0.1:8080", { loopbackHttpOnly: true })).toBeUndefined();
  });

  it("X-RB-10 CORS_ORIGINS: a comma-separated list of origins, default none; `*` and any other form stop the start naming the variable", () => {
    expect(loadConfig({}).CORS_ORIGINS).toEqual([]);
    expect(loadConfig({ CORS_ORIGINS: " https://a.example.com ,http://localhost:5173," }).CORS_ORIGINS).toEqual([
      "https://a.example.com",
      "http://localhost:5173",
    ]);
    for (const bad of ["*", "https://a.example.com/", "https://a.example.com,HTTPS://B.example.com"]) {
      expect(() => loadConfig({ CORS_ORIGINS: bad }), bad).toThrow(ConfigError);
      expect(() => loadConfig({ CORS_ORIGINS: bad }), bad).toThrow(/CORS_ORIGINS/);
    }
  });
});
