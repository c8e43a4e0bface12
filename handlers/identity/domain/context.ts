/** What every area of the identity service shares: clock, storage, keys, tokens, events. Settings go to the area that uses them. */
import { randomBytes } from "node:crypto";
import type { Database } from "../../../server/storage/transaction.ts";
import type { Logger } from "pino";
import type { Clock } from "../../../server/clock.ts";
import type { KeyRing } from "../../../server/keys/ring.ts";
import type { AttemptRecorder } from "../../../server/observability/metrics.ts";
import type { CoreQueries } from "../storage/core-queries.ts";
import type { KeyEncryption } from "../../../server/security/key-encryption.ts";
import { serverSecret } from "../../../server/storage/server-secrets.ts";
import type { AccessTokens } from "./access-tokens.ts";
import type { EventSink } from "./events.ts";

export interface IdentityContext {
  clock: Clock;
  logger: Logger;
  core: CoreQueries;
  /** Public base URL: the issuer of every token and the origin of the hosted pages. */
  issuer: string;
  /** The ring of signing keys (server/keys/): which key signs now, which the JWKS publishes. */
  keys: KeyRing;
  /** Key of the HMAC that client secrets are stored under (X-ID-APP-2). */
  clientSecretKey: Buffer;
  /** Key the webhook secrets are sealed under. */
  webhookSealingKey: Buffer;
  accessTokens: AccessTokens;
  events: EventSink;
  /** What the service counts: webhook attempts and token grants by outcome. */
  metrics: { webhooks: AttemptRecorder; tokenGrants: GrantRecorder };
}

/** Counts token requests by `grant_type` and outcome (handlers/identity/metrics.ts). */
export type GrantRecorder = { grant(grantType: string, outcome: string): void };

/** The HMAC key for client secrets: created once, shared by every instance. */
export async function loadClientSecretKey(db: Database, clock: Clock, encryption: KeyEncryption): Promise<Buffer> {
  const value = await serverSecret(
    db,
    "client_secret_hmac",
    () => randomBytes(32).toString("base64url"),
    clock.now().toISOString(),
    encryption,
  );
  return Buffer.from(value, "base64url");
}
