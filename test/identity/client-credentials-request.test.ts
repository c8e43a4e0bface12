/** What a client_credentials request may ask for (X-ID-CC-1..3), decided from the application alone. */
import { describe, expect, it } from "vitest";
import type { Application } from "../../handlers/identity/storage/applications.ts";
import { readClientCredentialsRequest } from "../../handlers/identity/domain/oauth/grants/client-credentials-request.ts";

const app = {
  clientId: "svc",
  clientType: "confidential",
  clientCredentialsEnabled: true,
  clientCredentialsScopes: ["reports:read", "reports:write"],
  resources: ["https://api.example/reports"],
} as Application;

describe("client_credentials requests", () => {
  it("X-ID-CC-1 an application without the grant enabled, or a public one, is unauthorized_client", () => {
    expect(() => readClientCredentialsRequest({ ...app, clientCredentialsEnabled: false }, {})).toThrow(
      expect.objectContaining({ code: "unauthorized_client" }),
    );
    expect(() => readClientCredentialsRequest({ ...app, clientType: "public" }, {})).toThrow(
      expect.objectContaining({ code: "unauthorized_client" }),
    );
  });

  it("X-ID-CC-2 scope defaults to the allowed ones; one outside them is invalid_scope", () => {
    expect(readClientCredentialsRequest(app, {})).toEqual({ scopes: ["reports:read", "reports:write"], audience: "svc" });
    expect(readClientCredentialsRequest(app, { scope: "reports:read" }).scopes).toEqual(["reports:read"]);
    expect(() => readClientCredentialsRequest(app, { scope: "reports:read openid" })).toThrow(
      expect.objectContaining({ code: "invalid_scope" }),
    );
  });

  it("X-ID-CC-3 resource must be a registered absolute URI without fragment, else invalid_target", () => {
    expect(readClientCredentialsRequest(app, { resource: "https://api.example/reports" }).audience).toBe("https://api.example/reports");
    for (const resource of ["https://api.example/other", "reports", "https://api.example/reports#x"])
      expect(() => readClientCredentialsRequest(app, { resource })).toThrow(expect.objectContaining({ code: "invalid_target" }));
  });
});
