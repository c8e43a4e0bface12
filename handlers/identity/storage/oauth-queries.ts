/** Named queries of the OAuth area over knex. No HTTP, no rules: those live in domain/oauth/. */
import type { Knex } from "knex";
import type { RequestRow, SessionRow, SocialStateRow } from "./schema.ts";

export type Database = Knex | Knex.Transaction;

export function createOAuthQueries(db: Knex) {
  return {
    db,
    transaction: <T>(fn: (trx: Knex.Transaction) => Promise<T>) => db.transaction(fn),

    // Sessions
    insertSession: (row: SessionRow, trx: Database = db) => trx("oauth_sessions").insert(row),
    findSession: (idHash: string, now: string) =>
      db<SessionRow>("oauth_sessions").where({ id_hash: idHash }).andWhere("expires_at", ">", now).first(),
    deleteSession: (idHash: string) => db("oauth_sessions").where({ id_hash: idHash }).delete(),

    // Pending authorization requests
    insertRequest: (row: RequestRow) => db("oauth_requests").insert(row),
    findRequest: (id: string, now: string) => db<RequestRow>("oauth_requests").where({ id }).andWhere("expires_at", ">", now).first(),
    deleteRequest: (id: string, trx: Database = db) => trx("oauth_requests").where({ id }).delete(),
    deleteExpiredRequests: (now: string) => db("oauth_requests").where("expires_at", "<=", now).delete(),

    // Consents
    findConsent: (userId: string, applicationId: string) =>
      db("oauth_consents").where({ user_id: userId, application_id: applicationId }).first() as Promise<{ scopes: string } | undefined>,
    saveConsent: (userId: string, applicationId: string, scopes: string[], at: string, trx: Database = db) =>
      trx("oauth_consents")
        .insert({ user_id: userId, application_id: applicationId, scopes: JSON.stringify(scopes), updated_at: at })
        .onConflict(["user_id", "application_id"])
        .merge(["scopes", "updated_at"]),

    // Social sign-in states
    insertSocialState: (row: SocialStateRow) => db("oauth_social_states").insert(row),
    /** Takes the state (single use): returns it and deletes it, or undefined if unknown or expired. */
    takeSocialState: async (stateHash: string, now: string) =>
      db.transaction(async (trx) => {
        const row = await trx<SocialStateRow>("oauth_social_states").where({ state_hash: stateHash }).first();
        if (!row) return undefined;
        const deleted = await trx("oauth_social_states").where({ state_hash: stateHash }).delete();
        return deleted === 1 && row.expires_at > now ? row : undefined;
      }),
  };
}

export type OAuthQueries = ReturnType<typeof createOAuthQueries>;
