/**
 * API keys (EM-2): `em_live_` or `em_test_` followed by 43 base64url characters (32 random bytes).
 * Only the SHA-256 of a key is stored, with its first 12 characters for display: a lookup by hash
 * is both the check and the constant-time part (no secret is compared byte by byte). A test key
 * sends every recipient to the simulator; a sending key may only send and read messages.
 *
 * Keys are the account's (X-EM-27): a live key manages keys of both modes (it makes the test
 * keys); a test key only test keys, so a test key can never revoke, or even see, the live
 * integration's keys.
 */
import { randomUUID } from "node:crypto";
import type { Clock } from "../../../server/clock.ts";
import { randomSecret, sha256Hex } from "../../../server/security/tokens.ts";
import { notFound } from "../../../server/domain/errors.ts";
import type { ApiKeyRow, ApiKeyStore, KeyMode, KeyPermission } from "../storage/api-keys.ts";

export type { ApiKeyRow, KeyMode, KeyPermission };

/** Who is calling: the key's id, what it may do, and whether it is a test key. */
export interface EmailPrincipal {
  apiKeyId: string;
  permission: KeyPermission;
  test: boolean;
}

const KEY_FORMAT = /^em_(live|test)_[A-Za-z0-9_-]{43}$/;
/** The mode of the keys a caller may see and revoke: a test key only test keys; a live key every key (undefined). */
const visibleMode = (caller: EmailPrincipal): KeyMode | undefined => (caller.test ? "test" : undefined);
/** `last_used_at` is written at most this often per key, so authentication is a read, not a write. */
const LAST_USED_RESOLUTION_MS = 60_000;

export function createApiKeys(queries: ApiKeyStore, clock: Clock) {
  const lastUsedWritten = new Map<string, number>();

  return {
    async create(input: { name: string; permission?: KeyPermission; test?: boolean }) {
      const mode: KeyMode = input.test ? "test" : "live";
      const key = `em_${mode}_${randomSecret(32)}`;
      const row: ApiKeyRow = {
        id: randomUUID(),
        name: input.name,
        prefix: key.slice(0, 12),
        key_hash: sha256Hex(key),
        permission: input.permission ?? "full_access",
        mode,
        created_at: clock.now().toISOString(),
        last_used_at: null,
        revoked_at: null,
      };
      await queries.insert(row);
      return { row, key };
    },

    /** The principal of a presented key, or undefined (missing, malformed, unknown or revoked: all 401). */
    async authenticate(key: string | undefined): Promise<EmailPrincipal | undefined> {
      if (!key || !KEY_FORMAT.test(key)) return undefined;
      const row = await queries.findByHash(sha256Hex(key));
      if (!row || row.revoked_at) return undefined;
      const now = clock.now();
      if ((lastUsedWritten.get(row.id) ?? 0) + LAST_USED_RESOLUTION_MS <= now.getTime()) {
        lastUsedWritten.set(row.id, now.getTime());
        await queries.touchLastUsed(row.id, now.toISOString());
      }
      return { apiKeyId: row.id, permission: row.permission, test: row.mode === "test" };
    },

    /** Active keys the caller may see, newest first: a test key sees the test keys only. */
    list: (caller: EmailPrincipal, page: number, pageSize: number) => queries.listActive(page, pageSize, visibleMode(caller)),

    /** Revokes a key at once: its next request is 401 (a key may revoke itself). A live key is 404 to a test key. */
    async revoke(caller: EmailPrincipal, id: string): Promise<void> {
      if (!(await queries.revoke(id, clock.now().toISOString(), visibleMode(caller)))) throw notFound("No API key with this id.");
    },
  };
}

export type ApiKeys = ReturnType<typeof createApiKeys>;
