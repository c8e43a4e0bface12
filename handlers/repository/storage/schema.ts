/**
 * The repository service's tables: for each its name, its columns and its row type, in one place
 * (server/storage/schema.ts). test/storage/schema.test.ts checks every table here
 * against the migrated database on SQLite and PostgreSQL. Tables that shared modules own
 * (signing_keys, the sign-in throttle's) are declared by those modules.
 */
import { defineTable } from "../../../server/storage/schema.ts";

export interface UserRow {
  id: string;
  email: string;
  password_hash: string;
  created_at: string;
}
export const users = defineTable<UserRow>()("users", ["id", "email", "password_hash", "created_at"]);

export interface RepositoryRow {
  id: string;
  owner_id: string;
  name: string;
  description: string;
  default_branch: string;
  created_at: string;
}
export const repositories = defineTable<RepositoryRow>()("repositories", [
  "id",
  "owner_id",
  "name",
  "description",
  "default_branch",
  "created_at",
]);

export interface AgentRow {
  id: string;
  owner_id: string;
  name: string;
  created_at: string;
  last_seen_at: string | null;
  revoked_at: string | null;
}
export const agents = defineTable<AgentRow>()("agents", ["id", "owner_id", "name", "created_at", "last_seen_at", "revoked_at"]);

export interface BuildRow {
  id: string;
  repository_id: string;
  owner_id: string;
  ref: string;
  status: "queued" | "running" | "succeeded" | "failed";
  agent_id: string | null;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
}
export const builds = defineTable<BuildRow>()("builds", [
  "id",
  "repository_id",
  "owner_id",
  "ref",
  "status",
  "agent_id",
  "created_at",
  "started_at",
  "finished_at",
]);

/** A user refresh token (X-RB-1, X-RB-8): one row per token; every rotation keeps the family. */
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
export const refreshTokens = defineTable<RefreshTokenRow>()("refresh_tokens", [
  "id",
  "family_id",
  "user_id",
  "token_hash",
  "expires_at",
  "used_at",
  "revoked_at",
  "created_at",
]);

/** A revoked refresh-token family (X-RB-12): no token of it is claimed again, including tokens stored later. */
export interface RevokedRefreshFamilyRow {
  family_id: string;
  revoked_at: string;
}
export const revokedRefreshFamilies = defineTable<RevokedRefreshFamilyRow>()("revoked_refresh_families", ["family_id", "revoked_at"]);

/**
 * A repository user who signs in with the trusted issuer (X-RB-15): the token's `iss` and `sub`
 * name one user, created on first use. The pair is the key, so two first requests at once link one user.
 */
export interface ExternalAccountRow {
  issuer: string;
  subject: string;
  user_id: string;
  created_at: string;
}
export const externalAccounts = defineTable<ExternalAccountRow>()("external_accounts", ["issuer", "subject", "user_id", "created_at"]);

/** Every table above: what the schema test compares with the migrated database. */
export const repositoryTables = [users, repositories, agents, builds, refreshTokens, revokedRefreshFamilies, externalAccounts];
