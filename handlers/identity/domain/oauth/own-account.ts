/**
 * The signed-in user's own account (the account page, X-ID-ACCT-1..6): what they granted which
 * application, their sessions, a password change and the account's deletion. Every operation acts
 * on the session's own user only: ids that come from a form are matched within that user's rows,
 * so another user's application, session or grant is never reached.
 */
import type { Clock } from "../../../../server/clock.ts";
import { hashPassword } from "../../../../server/security/passwords.ts";
import type { SignInRefusal, SignInThrottle } from "../../../../server/security/sign-in-throttle.ts";
import { sha256Hex } from "../../../../server/security/tokens.ts";
import type { IdentityStorage } from "../../storage/index.ts";
import type { SessionRow, UserRow } from "../../storage/schema.ts";
import type { AccountsArea } from "../accounts/accounts-area.ts";
import type { Audit, RequestOrigin } from "../audit.ts";
import type { BackchannelLogout } from "./backchannel-logout.ts";
import type { EventSink } from "../events.ts";
import type { Session } from "./sessions.ts";

/** One application on the page: what the user consented to, and when. */
export interface GrantedApplication {
  applicationId: string;
  name: string;
  scopes: string[];
  /** When the user last consented, or received tokens when no consent is recorded. */
  grantedAt: string;
  /** The last time the application received tokens for the user (a live grant), if any. */
  lastUsedAt: string | undefined;
}

/** One session on the page. `handle` names it in forms: derived from its stored hash, never the cookie. */
export interface ListedSession {
  handle: string;
  current: boolean;
  userAgent: string | undefined;
  ipAddress: string | undefined;
  signedInAt: string;
  lastUsedAt: string | undefined;
}

export interface AccountOverview {
  user: UserRow;
  applications: GrantedApplication[];
  sessions: ListedSession[];
}

/** What a password-checked action ends in: done, refused by the throttle, or why not. */
export type ConfirmedOutcome<T> =
  | { kind: "done"; value: T }
  | { kind: "refused"; refusal: SignInRefusal }
  | { kind: "wrong-password" }
  | { kind: "no-password" }
  | { kind: "changed-meanwhile" }
  | { kind: "gone" };

/** A session's handle in forms: a hash of the stored hash, so a page never shows what the database keys on. */
export const sessionHandle = (idHash: string) => sha256Hex(`session-handle:${idHash}`).slice(0, 32);

const scopesOf = (json: string): string[] => {
  const parsed: unknown = JSON.parse(json);
  return Array.isArray(parsed) ? parsed.filter((s): s is string => typeof s === "string") : [];
};

export function createOwnAccount(deps: {
  storage: IdentityStorage;
  accounts: AccountsArea;
  throttle: SignInThrottle;
  events: EventSink;
  clock: Clock;
  /** Each change below is recorded in its own transaction (X-ID-AUD-6). */
  audit: Audit;
  /** The back-channel logout tokens of an ended session (X-ID-LOGOUT-8). */
  logouts?: Pick<BackchannelLogout, "targetsOf" | "targetsOfUser" | "queue">;
}) {
  const { storage, accounts, throttle, events, clock, audit } = deps;
  const byUser = (userId: string) => ({ type: "user", id: userId }) as const;
  const now = () => clock.now().toISOString();

  /**
   * Runs `action` once the user's password checks out, under the sign-in throttle (X-ID-AZ-3,
   * X-ID-AZ-4): the account page is no way around its limits.
   */
  async function withPassword<T>(userId: string, password: string, ip: string, action: (user: UserRow) => Promise<ConfirmedOutcome<T>>) {
    const user = await accounts.findUserById(userId);
    if (!user) return { kind: "gone" } as const;
    if (!user.password_hash) return { kind: "no-password" } as const;
    const attempt = await throttle.attempt(
      user.email,
      ip,
      () => accounts.verifyPassword(user, password),
      (ok) => ok,
    );
    if (attempt.refused) return { kind: "refused", refusal: attempt.refused } as const;
    if (!attempt.result) return { kind: "wrong-password" } as const;
    return action(user);
  }

  return {
    /** The page's content for the session's user; undefined when the user is gone. */
    async overview(session: Session): Promise<AccountOverview | undefined> {
      const user = await accounts.findUserById(session.userId);
      if (!user) return undefined;
      const at = now();
      const [grants, rows] = await Promise.all([storage.userGrants.listForUser(user.id, at), storage.sessions.listForUser(user.id, at)]);
      const applications = grants.map((g) => {
        const scopes = g.consentScopes !== null ? scopesOf(g.consentScopes) : [...new Set(g.grantScopes.flatMap(scopesOf))];
        return {
          applicationId: g.applicationId,
          name: g.name,
          scopes,
          grantedAt: g.consentedAt ?? g.lastGrantAt ?? at,
          lastUsedAt: g.lastGrantAt ?? undefined,
        };
      });
      const sessions = rows.map((row: SessionRow) => ({
        handle: sessionHandle(row.id_hash),
        current: row.id_hash === session.idHash,
        userAgent: row.user_agent ?? undefined,
        ipAddress: row.ip_address ?? undefined,
        signedInAt: row.auth_time,
        lastUsedAt: row.last_used_at ?? undefined,
      }));
      // The current session first: the one the user is looking from.
      sessions.sort((a, b) => Number(b.current) - Number(a.current));
      return { user, applications, sessions };
    },

    /**
     * X-ID-ACCT-2: ends what the user gave the application, at once and in one transaction: its
     * unused codes, every grant (refresh families and the access tokens issued from them,
     * X-ID-TOK-5) and the consent, so the next sign-in asks again. Idempotent.
     */
    async revokeApplication(userId: string, applicationId: string, origin?: RequestOrigin): Promise<void> {
      await storage.transaction(async (tx) => {
        // Only an application the user had something with: an id typed into the form records nothing.
        if (!(await storage.userGrants.revokeApplication(userId, applicationId, now(), tx))) return;
        await audit.record(tx, { type: "user.application_access_removed", actor: byUser(userId), userId, applicationId, origin });
      });
    },

    /** X-ID-ACCT-4: ends one of the user's sessions by its handle. Whether it was the current one (then the browser is signed out). */
    async endSession(session: Session, handle: string, origin?: RequestOrigin): Promise<{ endedCurrent: boolean }> {
      const rows = await storage.sessions.listForUser(session.userId, now());
      const target = rows.find((row) => sessionHandle(row.id_hash) === handle);
      if (!target) return { endedCurrent: false };
      const { userId } = session;
      await storage.transaction(async (tx) => {
        // Read before the delete: the session's applications go with its row (X-ID-LOGOUT-8).
        const targets = (await deps.logouts?.targetsOf([target.id_hash], tx)) ?? [];
        // The one request that deleted the row records the event and queues the logout tokens.
        if (!(await storage.sessions.removeForUser(userId, target.id_hash, tx))) return;
        await audit.record(tx, { type: "session.ended", actor: byUser(userId), userId, origin, details: { via: "account_page" } });
        await deps.logouts?.queue(tx, userId, targets);
      });
      return { endedCurrent: target.id_hash === session.idHash };
    },

    /**
     * X-ID-ACCT-5: the current password (under the sign-in throttle), then, in one transaction:
     * the new hash (only if the password was not changed meanwhile), `user.updated` to the user's
     * applications, every other session ended and every grant revoked (refresh families and their
     * access tokens). The caller then gives the current browser a new session id.
     */
    changePassword(
      session: Session,
      current: string,
      next: string,
      ip: string,
      origin?: RequestOrigin,
    ): Promise<ConfirmedOutcome<UserRow>> {
      return withPassword(session.userId, current, ip, async (user) => {
        const newHash = await hashPassword(next);
        const at = now();
        return storage.transaction(async (tx): Promise<ConfirmedOutcome<UserRow>> => {
          if (!(await storage.users.replacePasswordHash(user.id, user.password_hash!, newHash, at, tx)))
            return { kind: "changed-meanwhile" };
          await events.publish(tx, {
            type: "user.updated",
            applicationIds: await storage.applications.ofUser(user.id, tx),
            data: { userId: user.id, email: user.email, firstName: user.first_name, lastName: user.last_name, changedFields: ["password"] },
          });
          // X-ID-LOGOUT-8: the other sessions' applications, read before those sessions go.
          const others = ((await deps.logouts?.targetsOfUser(user.id, tx)) ?? []).filter((t) => t.sessionIdHash !== session.idHash);
          await storage.sessions.removeOthers(user.id, session.idHash, tx);
          await deps.logouts?.queue(tx, user.id, others);
          await storage.userGrants.revokeAllGrants(user.id, at, tx);
          await audit.record(tx, { type: "user.password_changed", actor: byUser(user.id), userId: user.id, origin });
          return { kind: "done", value: { ...user, password_hash: newHash, updated_at: at } };
        });
      });
    },

    /**
     * X-ID-ACCT-6: deletes the account as `DELETE /api/users/me` does (`user.deleted`, then every
     * session, code, grant and token with the user). Confirmed by the password (under the sign-in
     * throttle); an account without one (social sign-in only) by typing its email address.
     */
    async deleteAccount(
      session: Session,
      confirmation: { password?: string; email?: string },
      ip: string,
      origin?: RequestOrigin,
    ): Promise<ConfirmedOutcome<true>> {
      const user = await accounts.findUserById(session.userId);
      if (!user) return { kind: "gone" };
      // deleteUser records `user.deleted` with the delete (X-ID-AUD-1).
      const remove = async (): Promise<ConfirmedOutcome<true>> =>
        (await accounts.deleteUser(user.id, origin)) ? { kind: "done", value: true } : { kind: "gone" };
      if (!user.password_hash) {
        const typed = (confirmation.email ?? "").trim().toLowerCase();
        return typed === user.email ? remove() : { kind: "wrong-password" };
      }
      return withPassword(user.id, confirmation.password ?? "", ip, remove);
    },
  };
}

export type OwnAccount = ReturnType<typeof createOwnAccount>;
