/**
 * What one client may hold of the inbound listener (X-EM-17), so that no single peer can keep the
 * reporting MTAs out: the listener has a fixed number of sessions in all, and without these one
 * client holding them idle made every report answered 421 until it let go.
 *
 * - Sessions per peer: at most `maxPerPeer` at once from one address (IPv4 as itself, IPv6 by its
 *   /64, the sign-in throttle's buckets: one subscriber holds a whole /64). The next is answered
 *   421 4.7.0 at once and closed, as Postfix's `smtpd_client_connection_count_limit` does; the
 *   reporting MTA retries later, as it does for any 4xx.
 * - Idle without a transaction: a session must send `MAIL FROM` within `idleBeforeMailMs` of its
 *   greeting, and again within that time after each message is answered (an MTA that caches the
 *   connection sends its next message at once, or closes it). Otherwise it is answered 421 4.4.2
 *   and closed. Postfix shortens its own timeout the same way under load (`smtpd_timeout` of 10 s
 *   when stressed). Inside a transaction the listener's ordinary idle timeout applies.
 *
 * The counts live in this process: they bound what one client holds of this listener.
 */
import { addressBucket } from "../../../server/security/sign-in-throttle.ts";

export interface SessionLimits {
  /** Sessions one peer (IPv4 address, IPv6 /64) may hold at once. */
  maxPerPeer: number;
  /** How long a session may stand without a transaction (before MAIL FROM, and between messages). */
  idleBeforeMailMs: number;
}

export interface SessionGuard {
  /** A session was greeted: an error to refuse it with, or undefined to serve it. */
  opened(session: { id: string; remoteAddress: string }): Error | undefined;
  /** MAIL FROM arrived: the session is in a transaction. */
  mailFrom(sessionId: string): void;
  /** A message was answered: the session stands without a transaction again. */
  messageAnswered(sessionId: string): void;
  /** The connection closed, whatever closed it. */
  closed(sessionId: string): void;
}

interface Tracked {
  peer: string;
  idle?: NodeJS.Timeout | undefined;
}

/** `expire(sessionId)` answers the session 421 4.4.2 and closes it (the listener owns the connection). */
export function createSessionGuard(limits: SessionLimits, expire: (sessionId: string) => void): SessionGuard {
  const sessions = new Map<string, Tracked>();
  const perPeer = new Map<string, number>();

  const armIdle = (id: string, tracked: Tracked) => {
    clearTimeout(tracked.idle);
    tracked.idle = setTimeout(() => expire(id), limits.idleBeforeMailMs);
    tracked.idle.unref();
  };

  return {
    opened({ id, remoteAddress }) {
      const peer = addressBucket(remoteAddress);
      const held = perPeer.get(peer) ?? 0;
      if (held >= limits.maxPerPeer) {
        return Object.assign(new Error("4.7.0 Too many connections from your address, try again later"), { responseCode: 421 });
      }
      perPeer.set(peer, held + 1);
      const tracked: Tracked = { peer };
      sessions.set(id, tracked);
      armIdle(id, tracked);
      return undefined;
    },
    mailFrom(id) {
      const tracked = sessions.get(id);
      if (tracked) clearTimeout(tracked.idle);
    },
    messageAnswered(id) {
      const tracked = sessions.get(id);
      if (tracked) armIdle(id, tracked);
    },
    closed(id) {
      const tracked = sessions.get(id);
      // Sessions refused above, or closed before they were greeted, were never counted.
      if (!tracked) return;
      clearTimeout(tracked.idle);
      sessions.delete(id);
      const held = (perPeer.get(tracked.peer) ?? 1) - 1;
      if (held > 0) perPeer.set(tracked.peer, held);
      else perPeer.delete(tracked.peer);
    },
  };
}
