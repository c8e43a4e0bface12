/** ID-EV-6: the reference receiver (examples/webhook-receiver) against the real service. */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHmac } from "node:crypto";
import type { AddressInfo } from "node:net";
import { createWebhookReceiver, type WebhookEvent } from "../../examples/webhook-receiver/receiver.ts";
import { createWebhook, publishEvent, userData, waitForHistory, waitUntil, webhookWorld, type WebhookWorld } from "./webhooks-fixtures.ts";
import { identityOnDeployment, NEEDS, skipFileOnDeployment } from "../harness/skip.ts";
import { observeReceiver } from "../harness/contract-recorder.ts";

let world: WebhookWorld;
let app: { id: string };
skipFileOnDeployment(identityOnDeployment(), NEEDS.webhookReceivers);
beforeAll(async () => {
  if (identityOnDeployment()) return;
  ({ app } = world = await webhookWorld());
});
afterAll(async () => world?.close());

describe("reference receiver", () => {
  it("ID-EV-6 receivers deduplicate by delivery id; the reference receiver checks the signature in constant time and answers 401 on a mismatch", async () => {
    const handled: WebhookEvent[] = [];
    // The secret is known only after creating the webhook; the receiver reads it from here.
    let secret = "";
    let server = createWebhookReceiver("placeholder", () => {});
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const port = (server.address() as AddressInfo).port;
    const url = `http://127.0.0.1:${port}/`;
    const hook = await createWebhook(world, app.id, { url, events: ["user.created"] });
    secret = hook.secret;
    await new Promise<void>((r) => server.close(() => r()));
    server = createWebhookReceiver(secret, (e) => void handled.push(e));
    observeReceiver(server, "identity-webhooks");
    await new Promise<void>((r) => server.listen(port, "127.0.0.1", r));
    try {
      await publishEvent(world, "user.created", [app.id], userData());
      await waitUntil(() => handled.length === 1);
      const [first] = await waitForHistory(world, app.id, hook.id, 1);
      expect(first).toMatchObject({ success: true, statusCode: 204 });

      // A redelivery (same delivery id) is acknowledged but not processed again.
      const redo = await (await world.api()).POST("/api/applications/{appId}/webhooks/{webhookId}/deliveries/{deliveryId}/redeliver", {
        params: { path: { appId: app.id, webhookId: hook.id, deliveryId: first.id } },
      });
      expect(redo.response.status).toBe(202);
      const items = await waitForHistory(world, app.id, hook.id, 2);
      expect(items[0]).toMatchObject({ id: first.id, attemptNumber: 2, success: true, statusCode: 204 });
      expect(handled).toHaveLength(1);
      expect(handled[0]!.id).toBe(first.id);

      // Bad signatures: 401, nothing processed.
      const body = JSON.stringify({
        id: "5a6b7c8d-9e0f-4a1b-8c2d-3e4f5a6b7c8e",
        event: "user.created",
        timestamp: new Date().toISOString(),
        data: {},
      });
      const good = `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`;
      const post = (signature: string | undefined, payload = body) =>
        fetch(url, {
          method: "POST",
          headers: {
            "content-type": "application/json",
            "x-webhook-delivery-id": "5a6b7c8d-9e0f-4a1b-8c2d-3e4f5a6b7c8e",
            ...(signature ? { "x-webhook-signature": signature } : {}),
          },
          body: payload,
        });
      const flipped = good.slice(0, -1) + (good.endsWith("0") ? "1" : "0");
      for (const [sig, payload] of [
        [undefined, body],
        ["sha256=00", body],
        [flipped, body],
        [good, `${body} `],
        [`sha256=${createHmac("sha256", "other").update(body).digest("hex")}`, body],
      ] as const) {
        expect((await post(sig, payload)).status).toBe(401);
      }
      expect((await post(good)).status).toBe(204);
      await waitUntil(() => handled.length === 2);
      expect((await post(good)).status).toBe(204); // a duplicate: acknowledged, not processed
      await new Promise((r) => setTimeout(r, 50));
      expect(handled).toHaveLength(2);

      // And the service records a 401 from the receiver as a failed attempt (after a secret change).
      const regenerated = await (await world.api()).POST("/api/applications/{appId}/webhooks/{webhookId}/regenerate-secret", {
        params: { path: { appId: app.id, webhookId: hook.id } },
      });
      expect(regenerated.response.status).toBe(200);
      await publishEvent(world, "user.created", [app.id], userData());
      const latest = await waitForHistory(world, app.id, hook.id, 3);
      expect(latest[0]).toMatchObject({ success: false, statusCode: 401, error: "non_2xx" });
      expect(handled).toHaveLength(2);
    } finally {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    }
  });
});
