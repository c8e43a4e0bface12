/** The delivery engine's parts on their own: the SSRF guard at connect time, retry policies, signature schemes. */
import { describe, expect, it } from "vitest";
import { okReceiver } from "./ok-receiver.ts";
import { createHmac } from "node:crypto";
import { verify } from "@octokit/webhooks-methods";
import {
  createAddressPolicy,
  createSender,
  exponentialBackoffPolicy,
  fixedDelayPolicy,
  generateWebhookSecret,
  hexHmacScheme,
  standardWebhooksScheme,
  type AddressPolicy,
} from "../../server/webhooks/index.ts";

const receiver = okReceiver();

async function send(policy: AddressPolicy, host: string) {
  const sender = createSender({ policy, timeoutMs: 2000, connections: 2 });
  try {
    return await sender.send(`http://${host}:${receiver.port}/hook`, {}, Buffer.from("{}"));
  } finally {
    await sender.destroy();
  }
}

describe("SSRF guard at delivery time", () => {
  it("refuses an internal IP literal without connecting", async () => {
    const before = receiver.hits;
    const result = await send(createAddressPolicy("false"), "127.0.0.1");
    expect(result).toMatchObject({ success: false, error: "blocked_address", statusCode: null });
    expect(receiver.hits).toBe(before);
  });

  it("refuses a host name that resolves to an internal address (checked in the socket's own lookup)", async () => {
    const before = receiver.hits;
    const result = await send(createAddressPolicy("false"), "localhost");
    expect(result).toMatchObject({ success: false, error: "blocked_address" });
    expect(receiver.hits).toBe(before);
  });

  it("checks the address actually connected to, even when an earlier check passed (DNS rebinding)", async () => {
    // Allows the first look (before connecting), refuses the connected socket's address: what a DNS
    // answer that changed between check and use would look like.
    let looks = 0;
    const flipping: AddressPolicy = { refusal: () => (looks++ === 0 ? null : "internal") };
    const before = receiver.hits;
    const result = await send(flipping, "127.0.0.1");
    expect(result).toMatchObject({ success: false, error: "blocked_address" });
    expect(looks).toBe(2);
    expect(receiver.hits).toBe(before); // connected, refused, nothing sent
  });

  it("delivers to an explicitly allowed address", async () => {
    const result = await send(createAddressPolicy("127.0.0.1"), "127.0.0.1");
    expect(result).toMatchObject({ success: true, statusCode: 200, excerpt: "ok" });
  });
});

describe("retry policies", () => {
  it("fixed delay: the delay after each failure up to maxRetries, then null (final)", () => {
    const p = fixedDelayPolicy({ delaySeconds: 60, maxRetries: 3 });
    expect([1, 2, 3, 4].map((n) => p.nextDelayMs(n))).toEqual([60_000, 60_000, 60_000, null]);
    expect(fixedDelayPolicy({ delaySeconds: 5, maxRetries: 0 }).nextDelayMs(1)).toBeNull();
  });

  it("exponential backoff with full jitter: within [min, capped step], and finite", () => {
    const top = exponentialBackoffPolicy({ baseMs: 1000, maxMs: 60_000, maxRetries: 8, random: () => 0.999999 });
    expect([1, 2, 3, 7, 8].map((n) => top.nextDelayMs(n))).toEqual([1000, 2000, 4000, 60_000, 60_000]);
    expect(top.nextDelayMs(9)).toBeNull();
    const bottom = exponentialBackoffPolicy({ baseMs: 1000, maxMs: 60_000, maxRetries: 3, minMs: 500, random: () => 0 });
    expect(bottom.nextDelayMs(3)).toBe(500);
  });
});

describe("signature schemes", () => {
  const secret = generateWebhookSecret();
  const body = Buffer.from('{"id":"x","event":"user.created"}');
  const input = { deliveryId: "msg_1", eventType: "user.created", timestamp: 1_700_000_000, body, secrets: [secret] };

  it("hex HMAC: sha256=<lowercase hex> of the body keyed with the secret string (checked by @octokit/webhooks-methods)", async () => {
    const headers = hexHmacScheme("X-Webhook-Signature")(input);
    expect(headers["X-Webhook-Signature"]).toMatch(/^sha256=[0-9a-f]{64}$/);
    expect(await verify(secret, body.toString(), headers["X-Webhook-Signature"]!)).toBe(true);
    expect(hexHmacScheme("X-Service-Signature", "")(input)["X-Service-Signature"]).toBe(
      createHmac("sha256", secret).update(body).digest("hex"),
    );
  });

  it("Standard Webhooks: v1,<base64 HMAC of id.timestamp.body> per valid secret", () => {
    const old = generateWebhookSecret();
    const headers = standardWebhooksScheme()({ ...input, secrets: [secret, old] });
    const sign = (s: string) =>
      createHmac("sha256", Buffer.from(s.slice(6), "base64"))
        .update(`msg_1.1700000000.${body}`)
        .digest("base64");
    expect(headers).toEqual({
      "webhook-id": "msg_1",
      "webhook-timestamp": "1700000000",
      "webhook-signature": `v1,${sign(secret)} v1,${sign(old)}`,
    });
  });
});
