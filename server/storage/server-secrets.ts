/**
 * Named server secrets shared by every instance of a service (`server_secrets`: the key webhook
 * secrets are sealed under, identity's client-secret HMAC key), created by whichever instance needs
 * one first. With KEY_ENCRYPTION_KEY set they are stored sealed like the signing keys
 * (server/security/key-encryption.ts), and a plain one is sealed when it is next read, so a copy of
 * the database alone reveals neither them nor the webhook secrets sealed under them.
 */
import type { Knex } from "knex";
import { keyEncryption, type KeyEncryption } from "../security/key-encryption.ts";

export async function serverSecret(
  db: Knex,
  name: string,
  create: () => string,
  now: string,
  encryption: KeyEncryption = keyEncryption(),
): Promise<string> {
  await db("server_secrets")
    .insert({ name, value: encryption.protect(create()), created_at: now })
    .onConflict("name")
    .ignore();
  const { value } = (await db("server_secrets").where({ name }).first()) as { value: string };
  const plain = encryption.reveal(value, `server secret ${name}`);
  if (encryption.needsResealing(value))
    await db("server_secrets")
      .where({ name, value })
      .update({ value: encryption.protect(plain) });
  return plain;
}
