/** The key client secrets are stored under (an HMAC key, X-ID-APP-2): a server secret, created once and shared by every instance. */
import { randomBytes } from "node:crypto";
import type { Knex } from "knex";
import type { Clock } from "../../../server/clock.ts";
import type { KeyEncryption } from "../../../server/security/key-encryption.ts";
import { serverSecret } from "../../../server/storage/server-secrets.ts";

export async function loadClientSecretKey(db: Knex, clock: Clock, encryption: KeyEncryption): Promise<Buffer> {
  const value = await serverSecret(
    db,
    "client_secret_hmac",
    () => randomBytes(32).toString("base64url"),
    clock.now().toISOString(),
    encryption,
  );
  return Buffer.from(value, "base64url");
}
