/**
 * Single sign-on sessions (X-ID-SESS-1): an opaque 256-bit id in the `identity_session` cookie, its
 * SHA-256 in the database, an absolute lifetime of 7 days. Every sign-in makes a new id (and ends
 * the browser's previous session), so a session id planted before sign-in is worthless (fixation).
 */
import { randomSecret, sha256Hex } from "../../../../server/security/tokens.ts";
import type { Clock } from "../../../../server/clock.ts";
import type { SessionStore } from "../../storage/sessions.ts";

export const SESSION_TTL_SECONDS = 7 * 24 * 3600;

export interface Session {
  kind: "session";
  userId: string;
  /** Seconds since the epoch of the password (or social) sign-in: the ID token's `auth_time`. */
  authTime: number;
  idHash: string;
  /** How it signed in (RFC 8176 `amr` values): `["pwd"]` for a password or social sign-in, a passkey's values for a passkey's (X-ID-PK-3). */
  amr: string[];
}

/** What a session row without `amr` was signed in with: a password (or an upstream's sign-in, which this server saw as one). */
const PASSWORD_AMR = ["pwd"];

export function createSessions(sessions: SessionStore, clock: Clock) {
  return {
    /** The live session of a cookie value, or undefined. */
    async find(cookieValue: string | undefined): Promise<Session | undefined> {
      if (!cookieValue || cookieValue.length > 100) return undefined;
      const row = await sessions.find(sha256Hex(cookieValue), clock.now().toISOString());
      if (!row) return undefined;
      const amr = row.amr ? row.amr.split(" ") : PASSWORD_AMR;
      return { kind: "session", userId: row.user_id, authTime: Math.floor(Date.parse(row.auth_time) / 1000), idHash: row.id_hash, amr };
    },

    /**
     * Starts a session for `userId` with a fresh id, ending `previousCookie`'s session; `amr` says how
     * it signed in when that was not a password (a passkey). Returns the new cookie value.
     */
    async start(userId: string, previousCookie: string | undefined, amr?: string[]): Promise<{ cookieValue: string; session: Session }> {
      if (previousCookie) await sessions.remove(sha256Hex(previousCookie));
      const cookieValue = randomSecret(32);
      const now = clock.now();
      const idHash = sha256Hex(cookieValue);
      await sessions.insert({
        id_hash: idHash,
        user_id: userId,
        auth_time: now.toISOString(),
        created_at: now.toISOString(),
        expires_at: new Date(now.getTime() + SESSION_TTL_SECONDS * 1000).toISOString(),
        ...(amr ? { amr: amr.join(" ") } : {}),
      });
      const session: Session = { kind: "session", userId, authTime: Math.floor(now.getTime() / 1000), idHash, amr: amr ?? PASSWORD_AMR };
      return { cookieValue, session };
    },

    async end(cookieValue: string | undefined): Promise<void> {
      if (cookieValue) await sessions.remove(sha256Hex(cookieValue));
    },
  };
}

export type Sessions = ReturnType<typeof createSessions>;
