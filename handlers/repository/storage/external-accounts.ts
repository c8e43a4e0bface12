/**
 * The external accounts store (X-RB-15): which repository user a trusted issuer's `iss` + `sub`
 * is. The first token of a subject creates its user; two first tokens at once must still make one
 * user, so the link is claimed by the insert on the (issuer, subject) key, never by a read first.
 */
import type { Knex } from "knex";
import { type ExternalAccountRow, externalAccounts, type UserRow, users } from "./schema.ts";

export interface ExternalAccountStore {
  /**
   * The user linked to `issuer` + `subject`. With none, links `candidate`, inserted in the same
   * transaction; when a concurrent call linked another user first, `candidate` is not kept and
   * that user is the answer. Exactly one user per pair, on both engines.
   */
  userFor(link: { issuer: string; subject: string; at: string }, candidate: UserRow): Promise<string>;
}

/** Thrown inside the transaction to roll back the candidate user when another call won the link. */
class LinkedElsewhere extends Error {
  readonly userId: string;

  constructor(userId: string) {
    super("linked by a concurrent call");
    this.userId = userId;
  }
}

export function knexExternalAccounts(db: Knex): ExternalAccountStore {
  const linked = async (q: Knex | Knex.Transaction, issuer: string, subject: string) =>
    (await q<ExternalAccountRow>(externalAccounts.name).where({ issuer, subject }).first("user_id"))?.user_id;

  return {
    async userFor(link, candidate) {
      const existing = await linked(db, link.issuer, link.subject);
      if (existing) return existing;
      try {
        return await db.transaction(async (trx) => {
          await trx(users.name).insert({ ...candidate, email: candidate.email.toLowerCase() });
          // On PostgreSQL a concurrent insert of the same key waits for the first to commit, then does nothing.
          await trx(externalAccounts.name)
            .insert({ issuer: link.issuer, subject: link.subject, user_id: candidate.id, created_at: link.at })
            .onConflict(["issuer", "subject"])
            .ignore();
          const winner = await linked(trx, link.issuer, link.subject);
          if (winner !== candidate.id) throw new LinkedElsewhere(winner ?? "");
          return candidate.id;
        });
      } catch (err) {
        if (err instanceof LinkedElsewhere && err.userId) return err.userId;
        throw err;
      }
    },
  };
}
