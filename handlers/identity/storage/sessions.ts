/** The sessions store: single sign-on sessions (X-ID-SESS-1), by the hash of the cookie's id. */
import type { Knex } from "knex";
import type { Tx } from "../../../server/storage/transaction.ts";
import { type SessionRow, sessions } from "./schema.ts";

export interface SessionStore {
  insert(row: SessionRow, tx?: Tx): Promise<void>;
  /** The session, unless it expired at `now`. */
  find(idHash: string, now: string): Promise<SessionRow | undefined>;
  remove(idHash: string): Promise<void>;
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
