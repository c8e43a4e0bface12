/** The key every webhook secret of a service is sealed under: one server secret, shared by all instances (sealed itself under KEY_ENCRYPTION_KEY when set). */
import type { Knex } from "knex";
import type { KeyEncryption } from "../security/key-encryption.ts";
import { serverSecret } from "../storage/server-secrets.ts";
import { newSealingKey } from "./subscriptions.ts";

export async function loadWebhookSealingKey(db: Knex, now: Date, encryption: KeyEncryption): Promise<Buffer> {
  return Buffer.from(await serverSecret(db, "webhook_secret_key", newSealingKey, now.toISOString(), encryption), "base64url");
}
