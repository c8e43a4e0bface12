/** The API key store on SQLite: the lookup of every authenticated request, prepared once. */
import type { Knex } from "knex";
import { withPrepared } from "../../../../server/storage/sqlite/statements.ts";
import { type ApiKeyStore, knexApiKeys } from "../api-keys.ts";
import { apiKeys } from "../schema.ts";

export const API_KEY_STATEMENTS = {
  findByHash: `SELECT ${apiKeys.list()} FROM ${apiKeys.name} WHERE key_hash = ?`,
} as const;

export function sqliteApiKeys(db: Knex): ApiKeyStore {
  const withConnection = withPrepared(db, API_KEY_STATEMENTS);
  return {
    ...knexApiKeys(db),
    findByHash: (keyHash) =>
      withConnection((s) => {
        const row = s.findByHash.get(keyHash);
        return row && apiKeys.read(row);
      }),
  };
}
