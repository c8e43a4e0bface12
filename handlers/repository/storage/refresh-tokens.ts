/**
 * Storage of the user refresh tokens (X-RB-1, X-RB-8, X-RB-12): one row per token, and one row per
 * revoked family in `revoked_refresh_families`.
 *
 * Revocation is a property of the family, not of the token rows that exist when it happens: a
 * refresh racing a reuse or a logout may store its new token after the family was revoked, and
 * that token must be refused all the same. So the claim that retires a token is one conditional
 * UPDATE (ADR 0002) that also asks whether its family is revoked; whichever of a claim and a
 * revocation comes second, no token of a revoked family is ever claimed again. The same on SQLite
 * and PostgreSQL: on PostgreSQL a claim whose statement starts after the revocation committed sees
 * the family row; one that started before it retires its token before the revocation, and the
 * successor it stores belongs to the revoked family.
 */
import type { Database } from "../../../server/storage/db.ts";

export interface RefreshTokenRow {
  id: string; // the token's jti
  family_id: string; // one per login; every rotation keeps it
  user_id: string;
  token_hash: string;
  expires_at: string;
  used_at: string | null;
  /**
   * Set on the family's existing rows when it is revoked, beside the `revoked_refresh_families`
   * row: what versions before migration 0004 read, so that they refuse a revoked family's tokens
   * during a rolling upgrade. A revocation such an instance makes sets only this, so it is read too.
   */
  revoked_at: string | null;
  created_at: string;
}

/** A stored token, and when its family was revoked (null while it is live). */
export interface RefreshTokenState extends RefreshTokenRow {
  family_revoked_at: string | null;
}

export function createRefreshTokenQueries(db: Database) {
  return {
    insertRefreshToken: (row: RefreshTokenRow) => db("refresh_tokens").insert(row),

    findRefreshToken: (id: string): Promise<RefreshTokenState | undefined> =>
      db("refresh_tokens as t")
        .leftJoin("revoked_refresh_families as f", "f.family_id", "t.family_id")
        .where("t.id", id)
        .first("t.*", "f.revoked_at as family_revoked_at"),

    /**
     * Retires the token `id` of `familyId` and stores its successor, in one transaction; false (and
     * nothing written) unless this call won. The claim is the conditional UPDATE: the token still
     * unused and unrevoked, and its family not revoked. Two claims of one token: the row's lock
     * makes the second wait and then find `used_at` set.
     */
    rotateRefreshToken: (claim: { id: string; familyId: string; at: string }, successor: RefreshTokenRow): Promise<boolean> =>
      db.transaction(async (trx) => {
        const claimed = await trx("refresh_tokens")
          .where({ id: claim.id, family_id: claim.familyId })
          .whereNull("used_at")
          .whereNull("revoked_at")
          .whereNotExists(trx("revoked_refresh_families").select("family_id").where({ family_id: claim.familyId }))
          .update({ used_at: claim.at });
        if (claimed !== 1) return false;
        await trx("refresh_tokens").insert(successor);
        return true;
      }),

    /**
     * Revokes the family: from now on no claim of any of its tokens wins, including tokens stored
     * later. Idempotent; the first revocation's time is kept.
     */
    revokeRefreshFamily: (familyId: string, at: string) =>
      db.transaction(async (trx) => {
        await trx("revoked_refresh_families").insert({ family_id: familyId, revoked_at: at }).onConflict("family_id").ignore();
        await trx("refresh_tokens").where({ family_id: familyId }).whereNull("revoked_at").update({ revoked_at: at });
      }),
  };
}
