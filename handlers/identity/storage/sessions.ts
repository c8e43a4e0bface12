/** The sessions store: single sign-on sessions (X-ID-SESS-1), by the hash of the cookie's id. */
import type { Knex } from "knex";
import type { Tx } from "../../../server/storage/transaction.ts";
import { type SessionRow, sessions } from "./schema.ts";

export interface SessionStore {
  insert(row: SessionRow, tx?: Tx): Promise<void>;
  /** The session, unless it expired at `now`. */
  find(idHash: string, now: string): Promise<SessionRow | undefined>;
  remove(idHash: string): Promise<void>;

  // The account page (X-ID-ACCT-3, X-ID-ACCT-4).
  /** The user's sessions that have not expired at `now`, newest sign-in first. */
  listForUser(userId: string, now: string): Promise<SessionRow[]>;
  /** Ends the user's session `idHash` (scoped to the user: another user's id ends nothing); false when there was none. */
  removeForUser(userId: string, idHash: string, tx?: Tx): Promise<boolean>;
  /** Ends every session of the user but `keepIdHash`. */
  removeOthers(userId: string, keepIdHash: string, tx?: Tx): Promise<void>;
  /** Records a use at `at`, only when the last recorded one is before `staleBefore` (one write a minute at most). */
  touch(idHash: string, at: string, staleBefore: string): Promise<void>;
  /** Deletes the session and returns it, or undefined when no session had this id (another call took it first). */
  take(idHash: string, tx?: Tx): Promise<SessionRow | undefined>;
}

export function knexSessions(db: Knex): SessionStore {
  return {
    async insert(row, tx) {
      await (tx ?? db)(sessions.name).insert(row);
    },
    find: (idHash, now) => db<SessionRow>(sessions.name).where({ id_hash: idHash }).andWhere("expires_at", ">", now).first(),
    async remove(idHash) {
      await db(sessions.name).where({ id_hash: idHash }).delete();
    },

    listForUser: (userId, now) =>
      db<SessionRow>(sessions.name)
        .where({ user_id: userId })
        .andWhere("expires_at", ">", now)
        .orderBy([
          { column: "created_at", order: "desc" },
          { column: "id_hash", order: "asc" },
        ])
        .select([...sessions.columns]),
    removeForUser: async (userId, idHash, tx) => (await (tx ?? db)(sessions.name).where({ id_hash: idHash, user_id: userId }).delete()) > 0,
    async removeOthers(userId, keepIdHash, tx) {
      await (tx ?? db)(sessions.name).where({ user_id: userId }).andWhereNot({ id_hash: keepIdHash }).delete();
    },
    async touch(idHash, at, staleBefore) {
      await db(sessions.name)
        .where({ id_hash: idHash })
        .andWhere((q) => q.whereNull("last_used_at").orWhere("last_used_at", "<", staleBefore))
        .update({ last_used_at: at });
    },
    async take(idHash, tx) {
      const on = tx ?? db;
      const row = await on<SessionRow>(sessions.name).where({ id_hash: idHash }).first();
      if (!row) return undefined;
      // The DELETE decides: of two concurrent calls that read the row, only the one that deleted it gets it.
      const deleted = await on(sessions.name).where({ id_hash: idHash }).delete();
      return deleted > 0 ? row : undefined;
    },
  };
}
