/** The repository's trusted-issuer settings (X-RB-14): both or neither, a fetchable issuer, one scope token. */
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../app/load-config.ts";
import { configRefusal } from "../support/config-refusal.ts";
import { trustedIssuerOf } from "../../handlers/repository/config.ts";

describe("X-RB-14 REPOSITORY_TRUSTED_* settings", () => {
  it("X-RB-14 unset: no trusted issuer; set: issuer, audience and the default scope `repository`", () => {
    expect(trustedIssuerOf(loadConfig({}))).toBeUndefined();
    const config = loadConfig({
      REPOSITORY_TRUSTED_ISSUER: "https://id.example.com",
      REPOSITORY_TRUSTED_AUDIENCE: "https://builds.example.com",
    });
    expect(trustedIssuerOf(config)).toEqual({
      issuer: "https://id.example.com",
      audience: "https://builds.example.com",
      scope: "repository",
    });
  });

  it("X-RB-14 an issuer without an audience (or the reverse), an http issuer off loopback, this service's own URL and a scope that is not one token are refused", () => {
    expect(configRefusal({ REPOSITORY_TRUSTED_ISSUER: "https://id.example.com" })).toMatch(/REPOSITORY_TRUSTED_AUDIENCE/);
    expect(configRefusal({ REPOSITORY_TRUSTED_AUDIENCE: "repository" })).toMatch(/REPOSITORY_TRUSTED_AUDIENCE/);
    expect(configRefusal({ REPOSITORY_TRUSTED_ISSUER: "http://id.example.com", REPOSITORY_TRUSTED_AUDIENCE: "a" })).toMatch(
      /REPOSITORY_TRUSTED_ISSUER.*https/,
    );
    expect(configRefusal({ REPOSITORY_TRUSTED_SCOPE: "repository admin" })).toMatch(/REPOSITORY_TRUSTED_SCOPE/);
    expect(
      configRefusal({
        REPOSITORY_PUBLIC_URL: "https://builds.example.com",
        REPOSITORY_TRUSTED_ISSUER: "https://builds.example.com/",
        REPOSITORY_TRUSTED_AUDIENCE: "a",
      }),
    ).toMatch(/REPOSITORY_TRUSTED_ISSUER.*not this service's own/);
    expect(() => loadConfig({ REPOSITORY_TRUSTED_ISSUER: "http://127.0.0.1:3001", REPOSITORY_TRUSTED_AUDIENCE: "a" })).not.toThrow();
  });
});
