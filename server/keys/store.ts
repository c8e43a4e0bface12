/**
 * The signing keys' rows, in each service's own database, so every instance of a service (and
 * every restart) signs and verifies with the same keys. A purpose ("identity-access",
 * "repository-user", …) has a ring of keys: the one signing now, a next one published ahead of
 * its use, and old ones still verifying the tokens they signed (server/keys/schedule.ts).
 */
import { randomUUID } from "node:crypto";
import { exportJWK, generateKeyPair, type JWK } from "jose";
import type { Knex } from "knex";
import type { Migration } from "../storage/db.ts";
import type { KeyEncryption } from "../security/key-encryption.ts";

export type KeyAlg = "EdDSA" | "ES256";

export const KEY_RING_TABLE = "signing_key_ring";

export interface KeyRow {
  kid: string;
  purpose: string;
  alg: KeyAlg;
  /** The private JWK as JSON, or sealed under KEY_ENCRYPTION_KEY (server/security/key-encryption.ts). */
  private_jwk: string;
  public_jwk: string;
  created_at: string;
  publish_at: string;
  activate_at: string;
}

/** The first schema's table: one key per purpose. Its migrations still create it; 0008/0003 move its keys into the ring. */
export async function createSigningKeysTable(db: Knex): Promise<void> {
  await db.schema.createTable("signing_keys", (t) => {
    t.string("purpose").primary();
    t.string("kid").notNullable();
    t.text("private_jwk").notNullable();
    t.text("public_jwk").notNullable();
    t.string("created_at").notNullable();
  });
}

/**
 * Migration from one key per purpose to the ring: each key becomes its purpose's signing key,
 * published and active since it was made, so tokens it signed keep verifying and it keeps signing
 * until the first rotation. The old table is dropped, so no plain copy of a key stays behind.
 */
export const keyRingMigration: Migration = {
  async up(db) {
    await db.schema.createTable(KEY_RING_TABLE, (t) => {
      t.string("kid", 100).primary();
      t.string("purpose", 50).notNullable();
      t.string("alg", 10).notNullable();
      t.text("private_jwk").notNullable();
      t.text("public_jwk").notNullable();
      t.string("created_at").notNullable();
      t.string("publish_at").notNullable();
      t.string("activate_at").notNullable();
      t.index(["purpose", "activate_at"], "signing_key_ring_by_purpose");
    });
    const old = (await db("signing_keys").select()) as Array<{
      purpose: string;
      kid: string;
      private_jwk: string;
      public_jwk: string;
      created_at: string;
    }>;
    for (const row of old) {
      const alg: KeyAlg = (JSON.parse(row.public_jwk) as JWK).kty === "EC" ? "ES256" : "EdDSA";
      await db(KEY_RING_TABLE).insert({ ...row, alg, publish_at: row.created_at, activate_at: row.created_at });
    }
    await db.schema.dropTable("signing_keys");
  },
  async down(db) {
    await createSigningKeysTable(db);
    const rows = (await db(KEY_RING_TABLE).orderBy("activate_at", "asc")) as KeyRow[];
    const latest = new Map(rows.map((r) => [r.purpose, r]));
    for (const r of latest.values()) {
      await db("signing_keys").insert({
        purpose: r.purpose,
        kid: r.kid,
        private_jwk: r.private_jwk,
        public_jwk: r.public_jwk,
        created_at: r.created_at,
      });
    }
    await db.schema.dropTable(KEY_RING_TABLE);
  },
};

export const readKeyRows = (db: Knex, purpose: string): Promise<KeyRow[]> =>
  db(KEY_RING_TABLE).where({ purpose }).orderBy("activate_at", "asc");

export async function insertKeyRow(db: Knex, row: KeyRow): Promise<void> {
  await db(KEY_RING_TABLE).insert(row);
}

export async function deleteKeyRows(db: Knex, kids: string[]): Promise<void> {
  if (kids.length) await db(KEY_RING_TABLE).whereIn("kid", kids).delete();
}

export async function updatePrivateJwk(db: Knex, kid: string, privateJwk: string): Promise<void> {
  await db(KEY_RING_TABLE).where({ kid }).update({ private_jwk: privateJwk });
}

/** A new key pair of `alg` as a row, its private half protected by `encryption`. */
export async function newKeyRow(o: {
  purpose: string;
  alg: KeyAlg;
  now: Date;
  activateAt: Date;
  encryption: KeyEncryption;
}): Promise<KeyRow> {
  const { privateKey, publicKey } = await generateKeyPair(o.alg, { ...(o.alg === "EdDSA" ? { crv: "Ed25519" } : {}), extractable: true });
  return {
    kid: `${o.purpose}-${randomUUID()}`,
    purpose: o.purpose,
    alg: o.alg,
    private_jwk: o.encryption.protect(JSON.stringify(await exportJWK(privateKey))),
    public_jwk: JSON.stringify(await exportJWK(publicKey)),
    created_at: o.now.toISOString(),
    publish_at: o.now.toISOString(),
    activate_at: o.activateAt.toISOString(),
  };
}
