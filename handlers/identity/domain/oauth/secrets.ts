/**
 * The OAuth area's own keys, derived from the server's client-secret key with HMAC (one key per
 * purpose, so a value made for one purpose is useless for another), and the few operations on
 * them: CSRF tokens, and AES-256-GCM sealing of the little state that must come back intact (the
 * grace-window answer of a refresh rotation, the PKCE verifier towards a social provider).
 */
import { createCipheriv, createDecipheriv, createHmac, createSecretKey } from "node:crypto";
import { pooledRandomBytes } from "../../../../server/security/random.ts";
import { safeEqual } from "../../../../server/security/tokens.ts";

export function createSecrets(rootKey: Buffer) {
  // KeyObjects, not Buffers: Node 24's createHmac/createCipheriv catch two thrown TypeErrors on every
  // call to learn that a Buffer key is not a KeyObject (see client-secrets.ts).
  const derive = (purpose: string) => createSecretKey(createHmac("sha256", rootKey).update(`oauth:${purpose}:v1`).digest());
  const csrfKey = derive("csrf");
  const sealKey = derive("seal");

  /** The CSRF token for a browser's CSRF cookie value: HMAC, so it cannot be made without the server key. */
  const csrfToken = (cookieValue: string): string => createHmac("sha256", csrfKey).update(cookieValue).digest("base64url");

  return {
    csrfToken,
    /** Constant-time check of a submitted CSRF token against the browser's cookie. */
    csrfValid: (cookieValue: string | undefined, token: unknown): boolean =>
      typeof cookieValue === "string" && cookieValue.length > 0 && typeof token === "string" && safeEqual(csrfToken(cookieValue), token),

    /** AES-256-GCM, `iv.tag.ciphertext` in base64url. */
    seal(plaintext: string): string {
      const iv = pooledRandomBytes(12);
      const cipher = createCipheriv("aes-256-gcm", sealKey, iv);
      const body = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()]);
      return [iv, cipher.getAuthTag(), body].map((b) => b.toString("base64url")).join(".");
    },

    /** The plaintext, or undefined when the value was not sealed by this server. */
    open(sealed: string): string | undefined {
      const [iv, tag, body] = sealed.split(".").map((p) => Buffer.from(p, "base64url"));
      if (!iv || !tag || !body) return undefined;
      try {
        const decipher = createDecipheriv("aes-256-gcm", sealKey, iv);
        decipher.setAuthTag(tag);
        return Buffer.concat([decipher.update(body), decipher.final()]).toString("utf8");
      } catch {
        return undefined;
      }
    },
  };
}

export type Secrets = ReturnType<typeof createSecrets>;
