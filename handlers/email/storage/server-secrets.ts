/** Server secrets shared by every instance: created once by whichever instance needs one first. */
import type { Knex } from "knex";

export async function serverSecret(db: Knex, name: string, create: () => string, now: string): Promise<string> {
  await db("server_secrets").insert({ name, value: create(), created_at: now }).onConflict("name").ignore();
  const row = (await db("server_secrets").where({ name }).first()) as { value: string };
  return row.value;
}
