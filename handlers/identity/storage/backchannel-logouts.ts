/**
 * The back-channel logout store (X-ID-LOGOUT-8, X-ID-LOGOUT-10): which applications each session
 * signed into, and the outbox of logout tokens to send. The outbox rows are claimed under a lease
 * and finished by the holder of that lease, as the mail outbox's are: every write after the claim
 * is conditional on the lease token, so a dispatcher whose lease ran out changes nothing. The
 * session's rows go with the session (a cascade), so they are read in the session end's
 * transaction before the session row is deleted.
 */
import type { Knex } from "knex";
import type { Tx } from "../../../server/storage/transaction.ts";
import { applications, type BackchannelLogoutRow, backchannelLogouts, sessionApplications, sessions } from "./schema.ts";

export type { BackchannelLogoutRow };

/** An application of an ending session that takes logout tokens. */
export interface LogoutTarget {
  sessionIdHash: string;
  applicationId: string;
}

/** A claimed logout token to send: the outbox row with where and to whom it goes. */
export interface ClaimedLogout extends BackchannelLogoutRow {
  /** The application's URI now (it may have changed since the row was written); null: it no longer takes them. */
  uri: string | null;
  clientId: string | null;
}

export interface BackchannelLogoutStore {
  /** Records that the session signed into the application; nothing when the session is gone (it ended meanwhile). */
  recordSignIn(sessionIdHash: string, applicationId: string, at: string): Promise<void>;
  /** The applications with a back-channel logout URI that the sessions signed into (read before the sessions are deleted). */
  targetsOf(sessionIdHashes: string[], tx: Tx): Promise<LogoutTarget[]>;
  /** The applications with a back-channel logout URI that the user's sessions signed into. */
  targetsOfUser(userId: string, tx: Tx): Promise<LogoutTarget[]>;
  /** Queues logout tokens in the caller's transaction. */
  insert(rows: BackchannelLogoutRow[], tx: Tx): Promise<void>;
  /** Runs `then` once the transaction `tx` belongs to has committed; never when it rolls back. */
  onCommit(tx: Tx, then: () => void): void;
  /** Leases up to `limit` pending rows due by `now` (and not under a live lease) to `leaseToken` until `leaseExpiresAt`. */
  claimDue(now: string, leaseToken: string, leaseExpiresAt: string, limit: number): Promise<ClaimedLogout[]>;
  /** Finishes a leased row (`sent` or `failed`); false when the lease is no longer held. */
  finish(
    id: string,
    leaseToken: string,
    status: "sent" | "failed",
    at: string,
    attempts: number,
    lastError: string | null,
  ): Promise<boolean>;
  /** Ends the lease and makes the row due again at `nextAttemptAt`. */
  reschedule(id: string, leaseToken: string, nextAttemptAt: string, attempts: number, lastError: string): Promise<boolean>;
  /** Gives leases back unattempted: the rows are due at once for any dispatcher. */
  release(ids: string[], leaseToken: string): Promise<void>;
}

/** The rows a claim may take: pending, due, and under no live lease. */
function dueRows(q: Knex.QueryBuilder, now: string): Knex.QueryBuilder {
  return q
    .where("status", "pending")
    .whereNotNull("next_attempt_at")
    .andWhere("next_attempt_at", "<=", now)
    .andWhere((w) => w.whereNull("lease_expires_at").orWhere("lease_expires_at", "<", now));
}

const isForeignKeyViolation = (err: unknown) => {
  const code = (err as { code?: unknown }).code;
  return code === "23503" || code === "SQLITE_CONSTRAINT_FOREIGNKEY";
};

export function knexBackchannelLogouts(db: Knex): BackchannelLogoutStore {
  const leased = (id: string, leaseToken: string) =>
    db<BackchannelLogoutRow>(backchannelLogouts.name).where({ id, lease_token: leaseToken, status: "pending" });
  const ended = { lease_token: null, lease_expires_at: null };
  const targets = (on: Knex | Tx) =>
    on(`${sessionApplications.name} as sa`)
      .join(`${applications.name} as a`, "a.id", "sa.application_id")
      .whereNotNull("a.backchannel_logout_uri")
      .select({ sessionIdHash: "sa.session_id_hash", applicationId: "sa.application_id" });
  return {
    async recordSignIn(sessionIdHash, applicationId, at) {
      try {
        // Only while the session exists: a session ended meanwhile records nothing (and no FK error).
        await db.raw(
          `INSERT INTO ${sessionApplications.name} (${sessionApplications.list()}) SELECT id_hash, ?, ? FROM ${sessions.name} WHERE id_hash = ? ` +
            "ON CONFLICT (session_id_hash, application_id) DO NOTHING",
          [applicationId, at, sessionIdHash],
        );
      } catch (err) {
        // The session was deleted between the check and the insert (PostgreSQL, concurrent logout).
        if (!isForeignKeyViolation(err)) throw err;
      }
    },
    targetsOf: (sessionIdHashes, tx) =>
      sessionIdHashes.length ? targets(tx).whereIn("sa.session_id_hash", sessionIdHashes) : Promise.resolve([]),
    targetsOfUser: (userId, tx) => targets(tx).join(`${sessions.name} as s`, "s.id_hash", "sa.session_id_hash").where("s.user_id", userId),
    async insert(rows, tx) {
      if (rows.length) await tx(backchannelLogouts.name).insert(rows);
    },
    onCommit(tx, then) {
      let top = tx as Tx & { parentTransaction?: Tx };
      while (top.parentTransaction) top = top.parentTransaction as typeof top;
      top.executionPromise?.then(then, () => {});
    },
    async claimDue(now, leaseToken, leaseExpiresAt, limit) {
      const due = dueRows(db(backchannelLogouts.name).select("id"), now).orderBy("next_attempt_at").limit(limit);
      // The outer conditions again: the row must still be claimable when the update reaches it.
      const rows: Record<string, unknown>[] = await dueRows(db(backchannelLogouts.name).whereIn("id", due), now)
        .update({ lease_token: leaseToken, lease_expires_at: leaseExpiresAt })
        .returning(backchannelLogouts.columns as string[]);
      if (!rows.length) return [];
      const claimed = rows.map(backchannelLogouts.read);
      const apps = await db(applications.name)
        .whereIn(
          "id",
          claimed.map((r) => r.application_id),
        )
        .select("id", "client_id", "backchannel_logout_uri");
      const byId = new Map(apps.map((a) => [a.id as string, a]));
      return claimed.map((r) => ({
        ...r,
        uri: (byId.get(r.application_id)?.backchannel_logout_uri as string | null | undefined) ?? null,
        clientId: (byId.get(r.application_id)?.client_id as string | undefined) ?? null,
      }));
    },
    finish: async (id, leaseToken, status, at, attempts, lastError) =>
      (await leased(id, leaseToken).update({
        ...ended,
        status,
        next_attempt_at: null,
        finished_at: at,
        attempts,
        last_error: lastError,
      })) > 0,
    reschedule: async (id, leaseToken, nextAttemptAt, attempts, lastError) =>
      (await leased(id, leaseToken).update({ ...ended, next_attempt_at: nextAttemptAt, attempts, last_error: lastError })) > 0,
    async release(ids, leaseToken) {
      if (!ids.length) return;
      await db(backchannelLogouts.name).whereIn("id", ids).andWhere({ lease_token: leaseToken }).update(ended);
    },
  };
}
