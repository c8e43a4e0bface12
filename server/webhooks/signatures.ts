/**
 * Signature schemes as plain functions: given the exact bytes about to be sent, the delivery id,
 * the attempt's timestamp and the endpoint's valid secrets (newest first), return the headers to
 * add. A service composes the schemes its contract promises (identity: `X-Webhook-Signature` plus
 * Standard Webhooks; email: its own `X-Service-Signature`).
 */
import { createHmac, createSecretKey, randomBytes, type KeyObject } from "node:crypto";

/**
 * HMAC keys by secret: importing the key is a good part of an HMAC's cost, and secrets repeat.
 * One cache per way of reading a secret, keyed by the secret string itself (a composed key would
 * build and hash a new string per attempt).
 */
function keyCache(material: (secret: string) => Buffer): (secret: string) => KeyObject {
  const keys = new Map<string, KeyObject>();
  return (secret) => {
    let key = keys.get(secret);
    if (!key) {
      if (keys.size > 10_000) keys.clear();
      key = createSecretKey(material(secret));
      keys.set(secret, key);
    }
    return key;
  };
}
const utf8Key = keyCache((secret) => Buffer.from(secret, "utf8"));
const whsecKey = keyCache((secret) => Buffer.from(secret.startsWith("whsec_") ? secret.slice(6) : secret, "base64"));

export interface SignInput {
  deliveryId: string;
  /** The event's id, the same for every endpoint that receives the event. */
  eventId?: string;
  /** The event type (for schemes or headers that name it). */
  eventType: string;
  /** The attempt's time, Unix seconds. */
  timestamp: number;
  /** The exact body bytes sent. */
  body: Buffer;
  /** Secrets valid now, newest first (more than one only during a rotation overlap). */
  secrets: readonly string[];
}

export type SignatureScheme = (input: SignInput) => Record<string, string>;

/** A secret in the Standard Webhooks form: `whsec_` and the base64 of 32 random bytes. */
export const generateWebhookSecret = (): string => `whsec_${randomBytes(32).toString("base64")}`;

/**
 * `<header>: <prefix><lowercase hex HMAC-SHA256 of the body>`, keyed with the UTF-8 bytes of the
 * newest secret string as given (GitHub's `X-Hub-Signature-256` convention, which
 * `@octokit/webhooks-methods` verifies). Only the newest secret: one header, one value.
 */
export function hexHmacScheme(header: string, prefix = "sha256="): SignatureScheme {
  return ({ body, secrets }) => {
    const secret = secrets[0];
    if (secret === undefined) throw new Error("no signing secret");
    return { [header]: prefix + createHmac("sha256", utf8Key(secret)).update(body).digest("hex") };
  };
}

/**
 * Standard Webhooks (standardwebhooks.com): `webhook-id`, `webhook-timestamp` and
 * `webhook-signature: v1,<base64 HMAC-SHA256 of "id.timestamp.body">` keyed with the
 * base64-decoded part of each `whsec_` secret, one space-separated entry per valid secret.
 * `webhook-id` is the delivery's id (identity) or the event's (email: one id per event, the same
 * for every endpoint, so receivers that share a store deduplicate across endpoints).
 */
export function standardWebhooksScheme(options: { id?: "delivery" | "event" } = {}): SignatureScheme {
  const byEvent = options.id === "event";
  return ({ deliveryId, eventId, timestamp, body, secrets }) => {
    const id = byEvent ? (eventId ?? deliveryId) : deliveryId;
    const prefix = `${id}.${timestamp}.`;
    let signatures = "";
    for (const secret of secrets) {
      const signature = `v1,${createHmac("sha256", whsecKey(secret)).update(prefix, "utf8").update(body).digest("base64")}`;
      signatures = signatures ? `${signatures} ${signature}` : signature;
    }
    return { "webhook-id": id, "webhook-timestamp": String(timestamp), "webhook-signature": signatures };
  };
}

/** Several schemes at once; their headers must not collide. */
export function combineSchemes(...schemes: SignatureScheme[]): SignatureScheme {
  return (input) => {
    const headers: Record<string, string> = {};
    for (const scheme of schemes) Object.assign(headers, scheme(input));
    return headers;
  };
}
