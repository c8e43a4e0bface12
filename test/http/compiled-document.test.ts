/**
 * A document is compiled once per process, and the backends made from it stay separate services:
 * each has its own handlers and security handlers, strict registration still refuses what the
 * document does not declare, and each validates requests with the shared validators.
 */
import { describe, expect, it } from "vitest";
import { backendFor } from "../../server/http/compiled-document.ts";
import { definitionPath } from "../../server/definitions.ts";

const request = (body: unknown) => ({
  method: "post",
  path: "/v1/emails",
  headers: { "content-type": "application/json" },
  body,
});

describe("backendFor", () => {
  it("compiles a document once and keeps each backend's handlers its own", async () => {
    const [a, b] = await Promise.all([backendFor(definitionPath("email")), backendFor(definitionPath("email"))]);
    expect(a).not.toBe(b);
    expect(a.validator).toBe(b.validator);
    expect(a.router).toBe(b.router);

    for (const [api, name] of [
      [a, "a"],
      [b, "b"],
    ] as const) {
      api.register({ sendEmail: () => name, validationFail: () => `${name}: invalid`, notFound: () => "not found" });
      api.registerSecurityHandler("ApiKeyAuth", () => true);
    }
    const valid = { from: "sender@example.com", to: ["someone@example.com"], subject: "Hi", text: "Hello" };
    expect(await a.handleRequest(request(valid))).toBe("a");
    expect(await b.handleRequest(request(valid))).toBe("b");
    expect(await a.handleRequest(request({ subject: 1 }))).toBe("a: invalid");
  });

  it("refuses, as openapi-backend's own init does, an operation or scheme the document does not declare", async () => {
    const api = await backendFor(definitionPath("email"));
    expect(() => api.register("noSuchOperation", () => undefined)).toThrow(/Unknown operationId/);
    expect(() => api.registerSecurityHandler("NoSuchScheme", () => true)).toThrow(/Unknown security scheme/);
  });
});
