/**
 * Encryption at rest of the private signing keys (server/keys/) and of the server secrets
 * (server/storage/server-secrets.ts: the webhook sealing key, the client-secret HMAC key) under a key the operator keeps
 * outside the database: KEY_ENCRYPTION_KEY, and while it is being changed the one before it in
 * KEY_ENCRYPTION_KEY_PREVIOUS. Without one, keys are stored plain, as before; with one,
 * every key is sealed (server/security/secret-box.ts), so a copy of the database alone (a backup,
 * a replica, a support dump) cannot sign tokens.
 */
import { createSecretBox, type SecretBox } from "./secret-box.ts";

export class KeyEncryptionError extends Error {
  override name = "KeyEncryptionError";
}

export interface KeyEncryption {
  /** Whether a key encryption key is configured: stored keys are then sealed. */
  readonly enabled: boolean;
  /** What to store for `plain`: sealed under the current key, or `plain` itself when none is set. */
  protect(plain: string): string;
  /** The plain text of a stored value, sealed under the current or the previous key, or plain. */
  reveal(stored: string, what: string): string;
  /** Whether a stored value should be written again: plain while a key is set, or sealed under the previous key. */
  needsResealing(stored: string): boolean;
}

/** Sealed values are `v1.<iv>.<data>.<tag>` (server/security/secret-box.ts); plain ones are JWK JSON or base64url, never with a dot. */
const isSealed = (stored: string) => /^v1\.[^.]+\.[^.]*\.[^.]+$/.test(stored);

/** A 32-byte key from base64, base64url or hex text (`openssl rand -base64 32`). */
export function parseEncryptionKey(text: string): Buffer | undefined {
  const trimmed = text.trim();
  if (/^[0-9a-fA-F]{64}$/.test(trimmed)) return Buffer.from(trimmed, "hex");
  if (!/^[A-Za-z0-9+/_-]{43}=?$/.test(trimmed)) return undefined;
  const key = Buffer.from(trimmed.replace(/-/g, "+").replace(/_/g, "/"), "base64");
  return key.length === 32 ? key : undefined;
}

export function keyEncryption(current?: Buffer, previous?: Buffer): KeyEncryption {
  const now: SecretBox | undefined = current && createSecretBox(current);
  const before: SecretBox | undefined = previous && createSecretBox(previous);
  const opens = (box: SecretBox | undefined, stored: string) => {
    if (!box) return undefined;
    try {
      return box.open(stored);
    } catch {
      return undefined;
    }
  };
  return {
    enabled: Boolean(now),
    protect: (plain) => (now ? now.seal(plain) : plain),
    reveal(stored, what) {
      if (!isSealed(stored)) return stored;
      if (!now) throw new KeyEncryptionError(`${what} is encrypted at rest: set KEY_ENCRYPTION_KEY to the key it was sealed with.`);
      const plain = opens(now, stored) ?? opens(before, stored);
      if (plain === undefined) {
        throw new KeyEncryptionError(
          `${what} was sealed with another key than KEY_ENCRYPTION_KEY${before ? " or KEY_ENCRYPTION_KEY_PREVIOUS" : ""}: set the key it was sealed with (while changing keys, the old one in KEY_ENCRYPTION_KEY_PREVIOUS).`,
        );
      }
      return plain;
    },
    needsResealing: (stored) => (now ? !isSealed(stored) || opens(now, stored) === undefined : false),
  };
}
