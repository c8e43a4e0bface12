/**
 * OpenID Connect Back-Channel Logout 1.0, the sending half (X-ID-LOGOUT-9, X-ID-LOGOUT-10): the
 * outbox dispatcher of server/background (ADR 0010) claims due logout tokens under a lease, signs
 * each at its attempt (a fresh `iat` and two-minute `exp`, the same `jti` on every attempt), POSTs
 * it as `logout_token` through the webhook sender (the SSRF guard on every connection, no
 * redirects followed, one time limit) and records the answer under the same lease: a 2xx is sent;
 * anything else is due again after the next delay of the schedule, and failed once it is spent.
 * Every timer runs on the injected clock. At least once: a dispatcher that dies leaves its leases
 * to run out and the tokens are claimed again (the receiver may see a `jti` twice).
 */
import type { Logger } from "pino";
import { createOutboxDispatcher, type Leased, nextAttemptAt } from "../../../../server/background/outbox-dispatcher.ts";
import type { Clock } from "../../../../server/clock.ts";
import type { Sender } from "../../../../server/webhooks/sender.ts";
import type { BackchannelLogoutStore, ClaimedLogout } from "../../storage/backchannel-logouts.ts";
import type { AccessTokens } from "../access-tokens.ts";

/** Delays after failed attempt 1, 2, …: 6 attempts over about 2 h 36 min. */
export const BACKCHANNEL_RETRY_DELAYS_MS = [10_000, 60_000, 300_000, 1_800_000, 7_200_000];
/** Back-Channel Logout §2.4: a logout token is short-lived; two minutes from its signing. */
export const LOGOUT_TOKEN_TTL_SECONDS = 120;
export const BACKCHANNEL_LOGOUT_EVENT = "http://schemas.openid.net/event/backchannel-logout";

export interface BackchannelDeliveryOptions {
  clock: Clock;
  logger: Logger;
  store: BackchannelLogoutStore;
  issuer: string;
  accessTokens: Pick<AccessTokens, "sign">;
  sender: Sender;
  retryDelaysMs?: readonly number[];
  concurrency?: number;
  leaseMs?: number;
  pollIntervalMs?: number;
}

type Claimed = Leased<ClaimedLogout>;

const ERROR_LENGTH = 500;

export function createBackchannelDelivery(options: BackchannelDeliveryOptions) {
  const { clock, store, sender } = options;
  const log = options.logger.child({ component: "backchannel-logout" });
  const retryDelaysMs = options.retryDelaysMs ?? BACKCHANNEL_RETRY_DELAYS_MS;

  /** X-ID-LOGOUT-9: the logout token; `sub` and `sid` both, never a `nonce`. */
  function logoutToken(row: Claimed, clientId: string): Promise<string> {
    const iat = Math.floor(clock.now().getTime() / 1000);
    return options.accessTokens.sign("logout+jwt", {
      iss: options.issuer,
      aud: clientId,
      iat,
      exp: iat + LOGOUT_TOKEN_TTL_SECONDS,
      jti: row.id,
      sub: row.user_id,
      sid: row.sid,
      events: { [BACKCHANNEL_LOGOUT_EVENT]: {} },
    });
  }

  async function attempt(row: Claimed): Promise<void> {
    const attempts = row.attempts + 1;
    // The application was changed to take no logout tokens since: nothing to send, for good.
    if (!row.uri || !row.clientId) {
      await store.finish(row.id, row.lease_token, "failed", clock.now().toISOString(), row.attempts, "no back-channel logout URI");
      return;
    }
    let error: string;
    try {
      const body = Buffer.from(new URLSearchParams({ logout_token: await logoutToken(row, row.clientId) }).toString());
      const result = await sender.send(row.uri, { "content-type": "application/x-www-form-urlencoded" }, body);
      if (result.success) {
        await store.finish(row.id, row.lease_token, "sent", clock.now().toISOString(), attempts, null);
        return;
      }
      error = result.statusCode ? `HTTP ${result.statusCode}` : (result.errorDetail ?? result.error ?? "no answer");
    } catch (err) {
      error = err instanceof Error ? err.message : String(err);
    }
    const lastError = error.slice(0, ERROR_LENGTH);
    const now = clock.now().getTime();
    const retryAt = nextAttemptAt(retryDelaysMs, attempts, now);
    if (retryAt === undefined) {
      await store.finish(row.id, row.lease_token, "failed", new Date(now).toISOString(), attempts, lastError);
      log.warn({ logoutId: row.id, applicationId: row.application_id, attempts, error: lastError }, "back-channel logout failed for good");
      return;
    }
    await store.reschedule(row.id, row.lease_token, retryAt, attempts, lastError);
    log.info(
      { logoutId: row.id, applicationId: row.application_id, attempts, error: lastError, retryAt },
      "back-channel logout attempt failed",
    );
  }

  return createOutboxDispatcher<ClaimedLogout>({
    clock,
    concurrency: options.concurrency ?? 4,
    leaseMs: options.leaseMs ?? 120_000,
    pollIntervalMs: options.pollIntervalMs ?? 1_000,
    store,
    attempt,
    close: async () => sender.close().catch(() => {}),
    onError(err, phase, row) {
      log.error({ err, phase, logoutId: row?.id }, "back-channel logout dispatch failed unexpectedly");
    },
  });
}

export type BackchannelDelivery = ReturnType<typeof createBackchannelDelivery>;
