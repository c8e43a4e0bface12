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
 *   greeting, and again within that time after each message is answered or the transaction is
 *   reset (an MTA that caches the connection sends its next message at once, or closes it).
 *   Otherwise it is answered 421 4.4.2 and closed. Postfix shortens its own timeout the same way
 *   under load (`smtpd_timeout` of 10 s when stressed). Inside a transaction the listener's ordinary
 *   idle timeout applies, and the whole transaction must end within `transactionMs` (RFC 5321
 *   §4.5.3.2's longest wait, 10 minutes for the data), however often the client sends NOOP.
 *   smtp-server tells nothing of RSET, so the guard asks the session whether it is in a transaction
 *   each `idleBeforeMailMs`: a session that left one gets one more period, then is closed.
 *
 * The counts live in this process: they bound what one client holds of this listener.
 */
import { addressBucket } from "../../../server/security/sign-in-throttle.ts";

export interface SessionLimits {
  /** Sessions one peer (IPv4 address, IPv6 /64) may hold at once. */
  maxPerPeer: number;
  /** How long a session may stand without a transaction (before MAIL FROM, and between messages). */
  idleBeforeMailMs: number;
  /** How long one transaction may last, from its MAIL FROM. */
  transactionMs: number;
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
  /** When its current transaction's MAIL FROM arrived (Date.now()), while it may be in one. */
  transactionSince?: number | undefined;
}

/**
 * `expire(sessionId)` answers the session 421 4.4.2 and closes it (the listener owns the connection);
 * `inTransaction(sessionId)` says whether its envelope has a MAIL FROM now (RSET clears it).
 */
export function createSessionGuard(
  limits: SessionLimits,
  expire: (sessionId: string) => void,
  inTransaction: (sessionId: string) => boolean,
): SessionGuard {
  const sessions = new Map<string, Tracked>();
  const perPeer = new Map<string, number>();

  const armIdle = (id: string, tracked: Tracked) => {
    clearTimeout(tracked.idle);
    tracked.idle = setTimeout(() => check(id, tracked), limits.idleBeforeMailMs);
    tracked.idle.unref();
  };
  /** The period ended: close a session that stood without a transaction all of it, or one whose transaction ran too long. */
  const check = (id: string, tracked: Tracked) => {
    if (tracked.transactionSince === undefined) return expire(id);
    if (inTransaction(id)) {
      if (Date.now() - tracked.transactionSince >= limits.transactionMs) return expire(id);
    } else {
      tracked.transactionSince = undefined; // reset (RSET): one more period to start the next
    }
    armIdle(id, tracked);
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
      if (tracked) tracked.transactionSince ??= Date.now();
    },
    messageAnswered(id) {
      const tracked = sessions.get(id);
      if (!tracked) return;
      tracked.transactionSince = undefined;
      armIdle(id, tracked);
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
