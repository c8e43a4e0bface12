/** Named queries over API keys (stored as SHA-256 hashes). */
import type { Knex } from "knex";
import { pageNewestFirst } from "../../../server/storage/db.ts";
import { isSqlite } from "../../../server/storage/dialect.ts";
import { withPrepared } from "../../../server/storage/sqlite/statements.ts";

export type KeyPermission = "full_access" | "sending_access";
export type KeyMode = "live" | "test";

export interface ApiKeyRow {
  id: string;
  name: string;
  prefix: string;
  key_hash: string;
  permission: KeyPermission;
  mode: KeyMode;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}

export function createApiKeyQueries(db: Knex) {
  // SQLite: the lookup of every authenticated request, prepared once.
  const prepared = isSqlite(db) ? withPrepared(db, { findByHash: "SELECT * FROM api_keys WHERE key_hash = ?" }) : undefined;
  return {
    insert: (row: ApiKeyRow) => db("api_keys").insert(row),
    findByHash: (keyHash: string) =>
      prepared
        ? prepared((s) => s.findByHash.get(keyHash) as ApiKeyRow | undefined)
        : (db<ApiKeyRow>("api_keys").where({ key_hash: keyHash }).first() as Promise<ApiKeyRow | undefined>),
    touchLastUsed: (id: string, at: string) => db("api_keys").where({ id }).update({ last_used_at: at }),
    /** Active keys, newest first (the contract's order for listApiKeys); only those of `mode` when given. */
    async listActive(page: number, pageSize: number, mode?: KeyMode) {
      const q = db<ApiKeyRow>("api_keys").whereNull("revoked_at");
      if (mode) q.where({ mode });
      return pageNewestFirst<ApiKeyRow>(q, page, pageSize);
    },
    /** True when an active key (of `mode`, when given) was revoked. */
    revoke: async (id: string, at: string, mode?: KeyMode): Promise<boolean> =>
      (await db("api_keys")
        .where({ id, ...(mode ? { mode } : {}) })
        .whereNull("revoked_at")
        .update({ revoked_at: at })) > 0,
  };
}

export type ApiKeyQueries = ReturnType<typeof createApiKeyQueries>;
