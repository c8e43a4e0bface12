/**
 * The store of `private_key_jwt` assertion ids (X-ID-CC-7): each accepted assertion's `jti` is
 * kept until the assertion expires, and a second use of it is refused. Exactly once under
 * concurrency: the primary key decides between two inserts of one id, and an id whose row has
 * expired is taken over by one conditional UPDATE, never by read-then-write.
 */
import type { Knex } from "knex";
import { isUniqueViolation } from "../../../server/storage/transaction.ts";
import { type ClientAssertionJtiRow, clientAssertionJtis } from "./schema.ts";

export interface ClientAssertionStore {
  /** Records the id: true the first time, false while an earlier use of it has not expired at `now`. */
  useOnce(row: ClientAssertionJtiRow, now: string): Promise<boolean>;
}

export function knexClientAssertions(db: Knex): ClientAssertionStore {
  return {
    async useOnce(row, now) {
      try {
        await db(clientAssertionJtis.name).insert(row);
        return true;
      } catch (err) {
        if (!isUniqueViolation(err)) throw err;
      }
      // An expired row the purge has not removed yet: the id is free again, for one caller.
      const taken = await db(clientAssertionJtis.name)
        .where({ jti: row.jti })
        .andWhere("expires_at", "<=", now)
        .update({ application_id: row.application_id, expires_at: row.expires_at });
      return taken === 1;
    },
  };
}
