/** The sessions store: single sign-on sessions (X-ID-SESS-1), by the hash of the cookie's id. */
import type { Knex } from "knex";
import type { Tx } from "../../../server/storage/transaction.ts";
import { type SessionRow, sessions } from "./schema.ts";

export interface SessionStore {
  insert(row: SessionRow, tx?: Tx): Promise<void>;
  /** The session, unless it expired at `now`. */
  find(idHash: string, now: string): Promise<SessionRow | undefined>;
  remove(idHash: string): Promise<void>;
  /** Ends every session of the user (a password reset, X-ID-RST-5). */
  removeAllOfUser(userId: string, tx?: Tx): Promise<void>;
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
    async removeAllOfUser(userId, tx) {
      await (tx ?? db)(sessions.name).where({ user_id: userId }).delete();
    },
  };
}
