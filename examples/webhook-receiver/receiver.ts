/**
 * A reference receiver for the identity service's webhooks: copy it and replace `handle`.
 * Run: WEBHOOK_SECRET=whsec_… PORT=4902 node --import tsx examples/webhook-receiver/receiver.ts
 *
 * 1. Verify X-Webhook-Signature over the RAW body bytes (before any JSON parsing), in constant time;
 *    401 on a mismatch (the service records a failed attempt and retries).
 * 2. Deduplicate by X-Webhook-Delivery-Id: retries and redeliveries of one delivery share it.
 * 3. Answer 2xx at once and do the work afterwards (the service gives up after 30 seconds).
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import { createServer, type Server } from "node:http";
import { pathToFileURL } from "node:url";

export interface WebhookEvent {
  id: string;
  event: string;
  timestamp: string;
  data: Record<string, unknown>;
}

export function createWebhookReceiver(secret: string, handle: (event: WebhookEvent) => void | Promise<void>): Server {
  const seen = new Set<string>(); // use your database in production: a unique key on the delivery id
  return createServer((req, res) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > 1024 * 1024)
        req.destroy(); // deliveries are small; refuse floods
      else chunks.push(chunk);
    });
    req.on("end", () => {
      const raw = Buffer.concat(chunks);
      const expected = Buffer.from(`sha256=${createHmac("sha256", secret).update(raw).digest("hex")}`);
      const given = Buffer.from(String(req.headers["x-webhook-signature"] ?? ""));
      // timingSafeEqual needs equal lengths; the length of a valid signature is public anyway.
      if (req.method !== "POST" || given.length !== expected.length || !timingSafeEqual(given, expected)) {
        res.writeHead(401).end();
        return;
      }
      const deliveryId = String(req.headers["x-webhook-delivery-id"] ?? "");
      res.writeHead(204).end(); // acknowledge first, work later
      if (seen.has(deliveryId)) return; // a retry of something already handled
      seen.add(deliveryId);
      setImmediate(() =>
        Promise.resolve(handle(JSON.parse(raw.toString("utf8")) as WebhookEvent)).catch((err) => console.error("handler failed", err)),
      );
    });
  });
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const secret = process.env.WEBHOOK_SECRET;
  if (!secret) throw new Error("Set WEBHOOK_SECRET to the webhook's secret (whsec_…).");
  const port = Number(process.env.PORT ?? 4902);
  createWebhookReceiver(secret, (e) => console.log(`${e.event} ${e.id}`, e.data)).listen(port, "127.0.0.1", () =>
    console.log(`listening on http://127.0.0.1:${port}`),
  );
}
