/**
 * DPoP (RFC 9449, X-ID-DPOP-1..7): the proofs seen within the freshness window (a replayed `jti`
 * is refused) and, per grant, the thumbprint of the key its tokens are bound to. A new table and a
 * nullable column only: an instance of an earlier version neither reads nor writes them and keeps
 * issuing unbound grants, so the step is safe during a rolling upgrade. The expiry index serves
 * the retention purge of proofs.
 */
import type { Knex } from "knex";
import type { Migration } from "../../../../server/storage/db.ts";

export const dpop: Migration = {
  async up(db: Knex) {
    await db.schema.createTable("oauth_dpop_proofs", (t) => {
      // SHA-256 (hex) of the key's thumbprint and the proof's jti: one row per proof ever accepted.
      t.string("proof_key", 64).primary();
      t.string("expires_at").notNullable().index();
    });
    await db.schema.alterTable("oauth_grants", (t) => {
      // RFC 7638 thumbprint of the key the grant's refresh tokens are bound to (public clients).
      t.string("dpop_jkt", 64).nullable();
    });
  },
  async down(db: Knex) {
    await db.schema.alterTable("oauth_grants", (t) => t.dropColumn("dpop_jkt"));
    await db.schema.dropTable("oauth_dpop_proofs");
  },
};
