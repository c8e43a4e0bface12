/**
 * The DPoP proofs accepted within their freshness window (X-ID-DPOP-2). Recording is the single
 * insert whose conflict decides: of concurrent requests carrying the same proof exactly one wins,
 * with no read before the write.
 */
import type { Knex } from "knex";
import { dpopProofs } from "./schema.ts";

export interface DpopProofStore {
  /** Records a proof: false when it was recorded before (a replay). */
  record(proofKey: string, expiresAt: string): Promise<boolean>;
}

export function knexDpopProofs(db: Knex): DpopProofStore {
  return {
    async record(proofKey, expiresAt) {
      const inserted = await db(dpopProofs.name)
        .insert({ proof_key: proofKey, expires_at: expiresAt })
        .onConflict("proof_key")
        .ignore()
        .returning("proof_key");
      return inserted.length === 1;
    },
  };
}
