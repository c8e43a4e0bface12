/**
 * Single sign-on sessions (X-ID-SESS-1): an opaque 256-bit id in the `identity_session` cookie, its
 * SHA-256 in the database, an absolute lifetime of 7 days. Every sign-in makes a new id (and ends
 * the browser's previous session), so a session id planted before sign-in is worthless (fixation).
 */
import { randomSecret, sha256Hex } from "../../../../server/security/tokens.ts";
import type { Clock } from "../../../../server/clock.ts";
import type { Transactor } from "../../../../server/storage/transaction.ts";
import type { SessionStore } from "../../storage/sessions.ts";
import { amrOf } from "../factors/levels.ts";
import type { Audit, AuditDetails, RequestOrigin } from "../audit.ts";
import type { BackchannelLogout } from "./backchannel-logout.ts";

export const SESSION_TTL_SECONDS = 7 * 24 * 3600;
/** A session's last use is recorded at most this often (X-ID-ACCT-3): a write per minute, not per request. */
export const LAST_USE_PRECISION_SECONDS = 60;
/** How much of a User-Agent is kept (the column's width). */
const USER_AGENT_MAX = 512;

/** The browser a session was started from (X-ID-ACCT-3): its User-Agent and the client address the service saw. */
export interface SessionDevice {
  userAgent: string | undefined;
  ip: string;
}

export interface Session {
  kind: "session";
  userId: string;
  /** Seconds since the epoch of the password (or social) sign-in: the ID token's `auth_time`. */
  authTime: number;
  idHash: string;
  /** The methods of the sign-in (RFC 8176, X-ID-MFA-5): `pwd` or `fed`, then `otp` and `mfa` after a second factor. */
  amr: string[];
}

/** How a sign-in happened, for the audit log (X-ID-AUD-1): the method, the application it went through, the client. */
export interface SignInRecord {
  method: "password" | "social" | "sign_up" | "passkey";
  applicationId?: string | undefined;
  origin?: RequestOrigin | undefined;
  details?: AuditDetails;
}

export function createSessions(
  sessions: SessionStore,
  clock: Clock,
  log: { transaction: Transactor; audit: Audit; logouts?: Pick<BackchannelLogout, "targetsOf" | "queue"> },
) {
  return {
    /** The live session of a cookie value, or undefined. */
    async find(cookieValue: string | undefined): Promise<Session | undefined> {
      if (!cookieValue || cookieValue.length > 100) return undefined;
      const now = clock.now();
      const row = await sessions.find(sha256Hex(cookieValue), now.toISOString());
      if (!row) return undefined;
      const staleBefore = new Date(now.getTime() - LAST_USE_PRECISION_SECONDS * 1000).toISOString();
      if (!row.last_used_at || row.last_used_at < staleBefore) await sessions.touch(row.id_hash, now.toISOString(), staleBefore);
      return {
        kind: "session",
        userId: row.user_id,
        authTime: Math.floor(Date.parse(row.auth_time) / 1000),
        idHash: row.id_hash,
        amr: amrOf(row.amr),
      };
    },

    /**
     * Starts a session for `userId` signed in with `amr` (RFC 8176 methods) with a fresh id, ending
     * `previousCookie`'s session, records the `device` it was started from (the account page lists
     * it) and `user.signed_in` with it (one transaction: no session without its event). Returns the
     * new cookie value.
     */
    async start(
      userId: string,
      previousCookie: string | undefined,
      amr: readonly string[] = ["pwd"],
      device?: SessionDevice,
      how?: SignInRecord,
    ): Promise<{ cookieValue: string; session: Session }> {
      if (previousCookie) await sessions.remove(sha256Hex(previousCookie));
      const cookieValue = randomSecret(32);
      const now = clock.now();
      const idHash = sha256Hex(cookieValue);
      await log.transaction(async (trx) => {
        await sessions.insert(
          {
            id_hash: idHash,
            user_id: userId,
            auth_time: now.toISOString(),
            created_at: now.toISOString(),
            expires_at: new Date(now.getTime() + SESSION_TTL_SECONDS * 1000).toISOString(),
            user_agent: device?.userAgent ? device.userAgent.slice(0, USER_AGENT_MAX) : null,
            ip_address: device?.ip ?? null,
            last_used_at: now.toISOString(),
            amr: amr.join(" "),
          },
          trx,
        );
        await log.audit.record(trx, {
          type: "user.signed_in",
          actor: { type: "user", id: userId },
          userId,
          applicationId: how?.applicationId,
          origin: how?.origin,
          details: { method: how?.method ?? "password", ...how?.details },
        });
      });
      const session: Session = { kind: "session", userId, authTime: Math.floor(now.getTime() / 1000), idHash, amr: [...amr] };
      return { cookieValue, session };
    },

    /**
     * Ends the cookie's session; the one call that deleted it records `session.ended` (X-ID-AUD-1)
     * and queues the back-channel logout tokens of the applications it signed into (X-ID-LOGOUT-8),
     * in the same transaction. Those applications are read first: they go with the session's row.
     */
    async end(cookieValue: string | undefined, origin?: RequestOrigin): Promise<void> {
      if (!cookieValue || cookieValue.length > 100) return;
      const idHash = sha256Hex(cookieValue);
      await log.transaction(async (trx) => {
        const targets = (await log.logouts?.targetsOf([idHash], trx)) ?? [];
        const ended = await sessions.take(idHash, trx);
        if (!ended) return;
        await log.audit.record(trx, { type: "session.ended", actor: { type: "user", id: ended.user_id }, userId: ended.user_id, origin });
        await log.logouts?.queue(trx, ended.user_id, targets);
      });
    },
  };
}

export type Sessions = ReturnType<typeof createSessions>;
