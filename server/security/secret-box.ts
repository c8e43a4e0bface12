/**
 * Secrets that must be read back (so cannot be hashed like client secrets), sealed with
 * AES-256-GCM under a 32-byte key: webhook signing secrets under a server key, so a copy of the
 * `webhooks` table alone (a backup, an export, a support query) does not reveal them; and the
 * private signing keys under the operator's KEY_ENCRYPTION_KEY (server/keys/).
 */
import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";

export interface SecretBox {
  seal(plain: string): string;
  open(sealed: string): string;
}

export function createSecretBox(key: Buffer): SecretBox {
  if (key.length !== 32) throw new Error("secret box key must be 32 bytes");
  return {
    seal(plain) {
      const iv = randomBytes(12);
      const cipher = createCipheriv("aes-256-gcm", key, iv);
      const data = Buffer.concat([cipher.update(plain, "utf8"), cipher.final()]);
      return `v1.${iv.toString("base64url")}.${data.toString("base64url")}.${cipher.getAuthTag().toString("base64url")}`;
    },
    open(sealed) {
      const [version, iv, data, tag] = sealed.split(".");
      if (version !== "v1" || !iv || !data || !tag) throw new Error("unreadable sealed secret");
      const decipher = createDecipheriv("aes-256-gcm", key, Buffer.from(iv, "base64url"));
      decipher.setAuthTag(Buffer.from(tag, "base64url"));
      return Buffer.concat([decipher.update(Buffer.from(data, "base64url")), decipher.final()]).toString("utf8");
    },
  };
}
