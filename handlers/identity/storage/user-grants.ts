/**
 * The user's grants as the account page sees them (X-ID-ACCT-2): per application, what the user
 * consented to (`oauth_consents`) and the grants still live (`oauth_grants`), and the revocation
 * that ends all of it for one application. A read model over the consents and grants tables,
 * kept apart from the token endpoint's grants store, whose hot paths it does not touch.
 */
import type { Knex } from "knex";
import type { Tx } from "../../../server/storage/transaction.ts";
import { applications, codes, consents, grants } from "./schema.ts";

/** One application the user has granted something. */
export interface UserGrantRow {
  applicationId: string;
  name: string;
  /** JSON string[] of the consented scopes; null when only grants remain (no consent row). */
  consentScopes: string | null;
  consentedAt: string | null;
  /** JSON string[] of each live grant's scopes. */
  grantScopes: string[];
  /** The latest live grant's creation (the last time the application received tokens). */
  lastGrantAt: string | null;
}

export interface UserGrantStore {
  /** Applications (third-party only) the user consented to or holds a live grant of at `now`, by name. */
  listForUser(userId: string, now: string): Promise<UserGrantRow[]>;
  /**
   * Ends everything the user gave the application, in the caller's transaction: unused codes are
   * spent, every grant revoked at `at` (its refresh family and access tokens end, X-ID-TOK-5), the
   * consent deleted. True when anything was there to end.
   */
  revokeApplication(userId: string, applicationId: string, at: string, tx: Tx): Promise<boolean>;
  /** Revokes every grant of the user at every application at `at` (the consents stay). */
  revokeAllGrants(userId: string, at: string, tx: Tx): Promise<void>;
}

/** A grant's end brought back to `at`, never moved later (as grants.ts's revokeGrant). */
const endAt = (on: Knex | Tx, at: string) => on.raw("CASE WHEN ends_at IS NOT NULL AND ends_at < ? THEN ends_at ELSE ? END", [at, at]);

export function knexUserGrants(db: Knex): UserGrantStore {
  return {
    async listForUser(userId, now) {
      const consented = (await db(`${consents.name} as c`)
        .join(`${applications.name} as a`, "a.id", "c.application_id")
        .where({ "c.user_id": userId })
        .andWhere("a.first_party", false)
        .select("a.id as application_id", "a.name as name", "c.scopes as scopes", "c.updated_at as updated_at")) as Array<{
        application_id: string;
        name: string;
        scopes: string;
        updated_at: string;
      }>;
      const live = (await db(`${grants.name} as g`)
        .join(`${applications.name} as a`, "a.id", "g.application_id")
        .where({ "g.user_id": userId })
        .whereNull("g.revoked_at")
        .andWhere((q) => q.whereNull("g.ends_at").orWhere("g.ends_at", ">", now))
        .andWhere("a.first_party", false)
        .select("a.id as application_id", "a.name as name", "g.scopes as scopes", "g.created_at as created_at")) as Array<{
        application_id: string;
        name: string;
        scopes: string;
        created_at: string;
      }>;
      const byApp = new Map<string, UserGrantRow>();
      const entry = (id: string, name: string) => {
        let row = byApp.get(id);
        if (!row) {
          row = { applicationId: id, name, consentScopes: null, consentedAt: null, grantScopes: [], lastGrantAt: null };
          byApp.set(id, row);
        }
        return row;
      };
      for (const c of consented) Object.assign(entry(c.application_id, c.name), { consentScopes: c.scopes, consentedAt: c.updated_at });
      for (const g of live) {
        const row = entry(g.application_id, g.name);
        row.grantScopes.push(g.scopes);
        if (!row.lastGrantAt || g.created_at > row.lastGrantAt) row.lastGrantAt = g.created_at;
      }
      return [...byApp.values()].sort((a, b) => a.name.localeCompare(b.name) || a.applicationId.localeCompare(b.applicationId));
    },

    async revokeApplication(userId, applicationId, at, tx) {
      const spent = await tx(codes.name)
        .where({ user_id: userId, application_id: applicationId })
        .whereNull("consumed_at")
        .update({ consumed_at: at });
      const revoked = await tx(grants.name)
        .where({ user_id: userId, application_id: applicationId })
        .whereNull("revoked_at")
        .update({ revoked_at: at, ends_at: endAt(tx, at) });
      const forgotten = await tx(consents.name).where({ user_id: userId, application_id: applicationId }).delete();
      return spent + revoked + forgotten > 0;
    },

    async revokeAllGrants(userId, at, tx) {
      await tx(codes.name).where({ user_id: userId }).whereNull("consumed_at").update({ consumed_at: at });
      await tx(grants.name)
        .where({ user_id: userId })
        .whereNull("revoked_at")
        .update({ revoked_at: at, ends_at: endAt(tx, at) });
    },
  };
}
