/**
 * DPoP-bound applications (X-ID-DPOP-8). Safe during a rolling upgrade: one nullable column, so an
 * instance of the earlier version keeps inserting applications (a null setting reads as `false`).
 *
 * - `applications.dpop_bound_access_tokens`: the token endpoint refuses the application's token
 *   requests without a DPoP proof (RFC 9449 §5.2's `dpop_bound_access_tokens`).
 */
import type { Knex } from "knex";
import type { Migration } from "../../../../server/storage/db.ts";

export const dpopBoundAccessTokens: Migration = {
  async up(db: Knex) {
    await db.schema.alterTable("applications", (t) => {
      t.boolean("dpop_bound_access_tokens").nullable();
    });
  },
  async down(db: Knex) {
    await db.schema.alterTable("applications", (t) => {
      t.dropColumn("dpop_bound_access_tokens");
    });
  },
};
