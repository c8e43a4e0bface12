/**
 * The refresh tokens store: the user refresh tokens (X-RB-1, X-RB-8, X-RB-12): one row per token, and one row per
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
import type { Knex } from "knex";
import { type RefreshTokenRow, refreshTokens, revokedRefreshFamilies } from "./schema.ts";

/** A stored token, and when its family was revoked (null while it is live). */
export interface RefreshTokenState extends RefreshTokenRow {
  family_revoked_at: string | null;
}

export interface RefreshTokenStore {
  insert(row: RefreshTokenRow): Promise<void>;
  find(id: string): Promise<RefreshTokenState | undefined>;
  /**
   * Retires the token `id` of `familyId` and stores its successor, in one transaction; false (and
   * nothing written) unless this call won. The claim is the conditional UPDATE: the token still
   * unused and unrevoked, and its family not revoked. Two claims of one token: the row's lock
   * makes the second wait and then find `used_at` set.
   */
  rotate(claim: { id: string; familyId: string; at: string }, successor: RefreshTokenRow): Promise<boolean>;
  /**
   * Revokes the family: from now on no claim of any of its tokens wins, including tokens stored
   * later. Idempotent; the first revocation's time is kept.
   */
  revokeFamily(familyId: string, at: string): Promise<void>;
}

export function knexRefreshTokens(db: Knex): RefreshTokenStore {
  return {
    async insert(row) {
      await db(refreshTokens.name).insert(row);
    },
    find: (id) =>
      db(`${refreshTokens.name} as t`)
        .leftJoin(`${revokedRefreshFamilies.name} as f`, "f.family_id", "t.family_id")
        .where("t.id", id)
        .first(db.raw(refreshTokens.list("t")), "f.revoked_at as family_revoked_at"),
    rotate: (claim, successor) =>
      db.transaction(async (trx) => {
        const claimed = await trx(refreshTokens.name)
          .where({ id: claim.id, family_id: claim.familyId })
          .whereNull("used_at")
          .whereNull("revoked_at")
          .whereNotExists(trx(revokedRefreshFamilies.name).select("family_id").where({ family_id: claim.familyId }))
          .update({ used_at: claim.at });
        if (claimed !== 1) return false;
        await trx(refreshTokens.name).insert(successor);
        return true;
      }),
    revokeFamily: (familyId, at) =>
      db.transaction(async (trx) => {
        await trx(revokedRefreshFamilies.name).insert({ family_id: familyId, revoked_at: at }).onConflict("family_id").ignore();
        await trx(refreshTokens.name).where({ family_id: familyId }).whereNull("revoked_at").update({ revoked_at: at });
      }),
  };
}
