/**
 * The SSRF guard and the https rule (X-ID-WH-1, `insecure_url`, `blocked_address`), on a service
 * configured like production: https required, no internal targets allowed.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { request } from "../harness/http.ts";
import { webhookWorld, type WebhookWorld } from "./webhooks-fixtures.ts";
import { identityOnDeployment, NEEDS, skipFileOnDeployment } from "../harness/skip.ts";

let world: WebhookWorld;
let app: { id: string };
skipFileOnDeployment(identityOnDeployment(), NEEDS.service);
beforeAll(async () => {
  if (identityOnDeployment()) return;
  ({ app } = world = await webhookWorld({ WEBHOOK_ALLOW_PRIVATE_TARGETS: "false", WEBHOOK_REQUIRE_HTTPS: "true" }));
});
afterAll(async () => world?.close());

/** Creates a webhook through the typed client: which hosts and schemes are refused is the deployment's rule (X-ID-WH-1), not the contract's. */
const create = async (url: string) =>
  (await world.api()).POST("/api/applications/{appId}/webhooks", {
    params: { path: { appId: app.id } },
    body: { url, events: ["user.created"] },
  });

describe("webhook URLs", () => {
  it("X-ID-WH-1 plain http is refused where https is required (400 validation_failed naming body.url)", async () => {
    const res = await create("http://hooks.example.com/identity");
    expect(res.response.status).toBe(400);
    expect(res.error).toMatchObject({ code: "validation_failed", errors: [{ field: "body.url" }] });
  });

  it("X-ID-WH-1 loopback, private, link-local and other internal targets are refused with 400 insecure_url", async () => {
    for (const url of [
      "https://127.0.0.1/hook",
      "https://127.9.9.9:8443/hook",
      "https://10.0.0.12/hook",
      "https://172.16.5.4/hook",
      "https://192.168.1.1/hook",
      "https://169.254.169.254/latest/meta-data",
      "https://100.64.0.1/hook",
      "https://0.0.0.0/hook",
      "https://[::1]/hook",
      "https://[fd00::1]/hook",
      "https://[fe80::1]/hook",
      "https://[::ffff:127.0.0.1]/hook",
      "https://localhost/hook",
    ]) {
      const res = await create(url);
      expect(res.response.status, url).toBe(400);
      expect(res.error, url).toMatchObject({ code: "insecure_url", errors: [{ field: "body.url" }] });
    }
    const ok = await create("https://93.184.215.14/hook"); // a public address
    expect(ok.response.status, JSON.stringify(ok.error)).toBe(201);
  });

  it("X-ID-WH-1 IPv6 forms that carry an internal IPv4 address (IPv4-compatible, IPv4-mapped, NAT64, 6to4, Teredo) and other IPv4 notations are refused with 400 insecure_url", async () => {
    for (const url of [
      "https://[::127.0.0.1]/hook",
      "https://[::a9fe:a9fe]/latest/meta-data",
      "https://[::ffff:169.254.169.254]/latest/meta-data",
      "https://[::ffff:0:127.0.0.1]/hook",
      "https://[64:ff9b::127.0.0.1]/hook",
      "https://[64:ff9b::a9fe:a9fe]/hook",
      "https://[64:ff9b:1::7f00:1]/hook",
      "https://[2002:7f00:1::1]/hook",
      "https://[2002:a9fe:a9fe::1]/hook",
      "https://[2001:0:4136:e378:8000:63bf:80ff:fffe]/hook",
      "https://0x7f000001/hook",
      "https://2130706433/hook",
      "https://017700000001/hook",
      "https://127.1/hook",
      "https://0xa9fea9fe/latest/meta-data",
    ]) {
      const res = await create(url);
      expect(res.response.status, url).toBe(400);
      expect(res.error, url).toMatchObject({ code: "insecure_url", errors: [{ field: "body.url" }] });
    }
    // A public IPv4 address stays reachable through the forms that carry it to it (DNS64 on IPv6-only hosts).
    for (const url of ["https://[::ffff:93.184.215.14]/hook", "https://[64:ff9b::93.184.215.14]/hook"]) {
      const ok = await create(url);
      expect(ok.response.status, `${url} ${JSON.stringify(ok.error)}`).toBe(201);
    }
  });

  it("X-ID-WH-1 URLs with credentials or other schemes are refused", async () => {
    const withCredentials = "https://user:pass@hooks.example.com/x";
    expect((await create(withCredentials)).response.status, withCredentials).toBe(400);
    // Another scheme is outside the contract's pattern (http or https): raw.
    const ftp = "ftp://hooks.example.com/x";
    const rawCreate = await request(world.url, "POST", `/api/applications/${app.id}/webhooks`, {
      token: await world.token(),
      json: { url: ftp, events: ["user.created"] },
    });
    expect(rawCreate.status, ftp).toBe(400);
    const update = await (await world.api()).PUT("/api/applications/{appId}/webhooks/{webhookId}", {
      params: { path: { appId: app.id, webhookId: "00000000-0000-4000-8000-000000000000" } },
      body: { url: "https://127.0.0.1/x" },
    });
    expect(update.response.status).toBe(404); // unknown webhook first; a known one gets the same 400 as create
  });
});
