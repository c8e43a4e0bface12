/** What every area of the identity service shares: clock, storage, keys, tokens, events, mail. Settings go to the area that uses them. */
import type { Logger } from "pino";
import type { Clock } from "../../../server/clock.ts";
import type { KeyRing } from "../../../server/keys/ring.ts";
import type { AttemptRecorder } from "../../../server/observability/metrics.ts";
import type { IdentityStorage } from "../storage/index.ts";
import type { AccessTokens } from "./access-tokens.ts";
import type { Audit } from "./audit.ts";
import type { EventSink } from "./events.ts";
import type { MailQueue } from "./mail/messages.ts";
import type { BackchannelLogout } from "./oauth/backchannel-logout.ts";

export interface IdentityContext {
  clock: Clock;
  logger: Logger;
  /** The service's stores, one per aggregate (storage/index.ts), and the transactor over them. */
  storage: IdentityStorage;
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
  /** Identity's mail: `ctx.mail.queue(tx, { to, template, locale?, applicationId?, values })` queues a message with the change in `tx` (X-ID-MAIL-1). */
  mail: MailQueue;
  /** The audit log: every part records its security events here (domain/audit.ts, X-ID-AUD-1). */
  audit: Audit;
  /** Back-Channel Logout: whatever ends sessions queues their logout tokens here, in its transaction (X-ID-LOGOUT-8). */
  logouts: BackchannelLogout;
}

/** Counts token requests by `grant_type` and outcome (handlers/identity/metrics.ts). */
export type GrantRecorder = { grant(grantType: string, outcome: string): void };
