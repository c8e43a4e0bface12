/**
 * The API key store (EM-2): keys stored as the SHA-256 of the key, looked up by it on every
 * authenticated request. The interface and its portable knex implementation; sqlite/api-keys.ts
 * prepares that lookup, and storage/index.ts picks one once.
 */
import type { Knex } from "knex";
import { pageNewestFirst } from "../../../server/storage/db.ts";
import { type ApiKeyRow, apiKeys, type KeyMode } from "./schema.ts";

export type { ApiKeyRow, KeyMode, KeyPermission } from "./schema.ts";

export interface ApiKeyStore {
  insert(row: ApiKeyRow): Promise<void>;
  findByHash(keyHash: string): Promise<ApiKeyRow | undefined>;
  touchLastUsed(id: string, at: string): Promise<void>;
  /** Active keys, newest first (the contract's order for listApiKeys); only those of `mode` when given. */
  listActive(page: number, pageSize: number, mode?: KeyMode): Promise<{ items: ApiKeyRow[]; totalCount: number }>;
  /** True when an active key (of `mode`, when given) was revoked. */
  revoke(id: string, at: string, mode?: KeyMode): Promise<boolean>;
}

export function knexApiKeys(db: Knex): ApiKeyStore {
  return {
    async insert(row) {
      await db(apiKeys.name).insert(row);
    },
    findByHash: (keyHash) => db<ApiKeyRow>(apiKeys.name).where({ key_hash: keyHash }).first(),
    async touchLastUsed(id, at) {
      await db(apiKeys.name).where({ id }).update({ last_used_at: at });
    },
    listActive(page, pageSize, mode) {
      const q = db<ApiKeyRow>(apiKeys.name).whereNull("revoked_at");
      if (mode) q.where({ mode });
      return pageNewestFirst<ApiKeyRow>(q, page, pageSize);
    },
    revoke: async (id, at, mode) =>
      (await db(apiKeys.name)
        .where({ id, ...(mode ? { mode } : {}) })
        .whereNull("revoked_at")
        .update({ revoked_at: at })) > 0,
  };
}
