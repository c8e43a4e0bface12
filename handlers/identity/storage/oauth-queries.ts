/** Named queries of the OAuth area over knex. No HTTP, no rules: those live in domain/oauth/. */
import type { Knex } from "knex";

export type Database = Knex | Knex.Transaction;

export interface SessionRow {
  id_hash: string;
  user_id: string;
  auth_time: string;
  created_at: string;
  expires_at: string;
}
export interface RequestRow {
  id: string;
  application_id: string;
  redirect_uri: string;
  scopes: string;
  state: string | null;
  code_challenge: string | null;
  code_challenge_method: string | null;
  nonce: string | null;
  prompt: string | null;
  created_at: string;
  expires_at: string;
}
export interface CodeRow {
  code_hash: string;
  grant_id: string;
  application_id: string;
  user_id: string;
  redirect_uri: string;
  scopes: string;
  code_challenge: string | null;
  code_challenge_method: string | null;
  nonce: string | null;
  auth_time: string;
  created_at: string;
  expires_at: string;
  consumed_at: string | null;
}
/** `ends_at`: after it nothing issued from the grant is live (domain/oauth/grant-end.ts); the retention purge counts from it. */
export interface GrantRow {
  id: string;
  application_id: string;
  user_id: string;
  scopes: string;
  auth_time: string;
  created_at: string;
  revoked_at: string | null;
  ends_at: string | null;
}
export interface RefreshRow {
  id: string;
  token_hash: string;
  grant_id: string;
  parent_id: string | null;
  created_at: string;
  expires_at: string;
  used_at: string | null;
  child_id: string | null;
  rotation_answer: string | null;
}
export interface SocialStateRow {
  state_hash: string;
  request_id: string;
  provider: string;
  secrets: string;
  created_at: string;
  expires_at: string;
}

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

    // Codes
    insertCode: (row: CodeRow, trx: Database = db) => trx("oauth_codes").insert(row),
    findCode: (codeHash: string) => db<CodeRow>("oauth_codes").where({ code_hash: codeHash }).first(),

    // Grants (refresh families and the access tokens issued from them)
    findGrant: (id: string, trx: Database = db) => trx<GrantRow>("oauth_grants").where({ id }).first(),
    /** Revoking ends everything issued from the grant at once: its end is brought back to `at` (never moved later). */
    revokeGrant: (id: string, at: string, trx: Database = db) =>
      trx("oauth_grants")
        .where({ id })
        .whereNull("revoked_at")
        .update({ revoked_at: at, ends_at: trx.raw("CASE WHEN ends_at IS NOT NULL AND ends_at < ? THEN ends_at ELSE ? END", [at, at]) }),

    // Refresh tokens
    findRefreshByHash: (tokenHash: string, trx: Database = db) =>
      trx<RefreshRow>("oauth_refresh_tokens").where({ token_hash: tokenHash }).first(),
    findRefreshById: (id: string, trx: Database = db) => trx<RefreshRow>("oauth_refresh_tokens").where({ id }).first(),

    // Revoked access tokens
    revokeAccessToken: (jti: string, expiresAt: string) =>
      db("oauth_revoked_access_tokens").insert({ jti, expires_at: expiresAt }).onConflict("jti").ignore(),

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
