/** X-EM-26: the email API is for servers (its keys are secrets): no browser page of another origin may call it. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { emailWorld } from "../harness/worlds.ts";
import { request } from "../harness/http.ts";
import type { EmailTarget } from "../harness/targets.ts";

let target: EmailTarget;
beforeAll(async () => {
  ({ target } = await emailWorld());
});
afterAll(async () => target?.close());

describe("CORS on the email API (X-EM-26)", () => {
  it("X-EM-26 a preflight from any origin is 405 with no CORS header, and no answer carries one", async () => {
    for (const [path, method] of [
      ["/v1/emails", "POST"],
      ["/v1/emails", "GET"],
      ["/v1/webhooks", "POST"],
      ["/v1/suppressions", "GET"],
    ] as const) {
      const pre = await request(target.url, "OPTIONS", path, {
        headers: {
          origin: "https://shop.example.com",
          "access-control-request-method": method,
          "access-control-request-headers": "authorization,content-type",
        },
      });
      expect(pre.status, path).toBe(405);
      expect(pre.body).toMatchObject({ code: "method_not_allowed" });
      expect(pre.headers.get("access-control-allow-origin"), path).toBeNull();
      expect(pre.headers.get("access-control-allow-methods"), path).toBeNull();
    }
    const list = await request(target.url, "GET", "/v1/emails?page=1", {
      token: target.apiKey,
      headers: { origin: "https://shop.example.com" },
    });
    expect(list.status).toBe(200);
    expect(list.headers.get("access-control-allow-origin")).toBeNull();
  });
});
