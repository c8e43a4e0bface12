/**
 * Signing keys: generated on first start and persisted in the service's own database, so every
 * instance of a service (and every restart) signs and verifies with the same keys.
 */
import { randomUUID } from "node:crypto";
import { exportJWK, generateKeyPair, importJWK, type JWK, type CryptoKey } from "jose";
import type { Db } from "./storage/db.ts";

export type KeyAlg = "EdDSA" | "ES256";

export interface SigningKey {
  kid: string;
  alg: KeyAlg;
  privateKey: CryptoKey;
  publicKey: CryptoKey;
  publicJwk: JWK;
}

export const SIGNING_KEYS_TABLE = "signing_keys";

/** Migration helper: the table every service uses for its keys. */
export async function createSigningKeysTable(db: Db): Promise<void> {
  await db.schema.createTable(SIGNING_KEYS_TABLE, (t) => {
    t.string("purpose").primary();
    t.string("kid").notNullable();
    t.text("private_jwk").notNullable();
    t.text("public_jwk").notNullable();
    t.string("created_at").notNullable();
  });
}

/** Loads the key for `purpose`, creating it (of `alg`) if this is the first start. Safe when instances race. */
export async function loadOrCreateKey(db: Db, purpose: string, alg: KeyAlg = "EdDSA"): Promise<SigningKey> {
  let row = await db(SIGNING_KEYS_TABLE).where({ purpose }).first();
  if (!row) {
    const { privateKey, publicKey } = await generateKeyPair(alg, { ...(alg === "EdDSA" ? { crv: "Ed25519" } : {}), extractable: true });
    const kid = `${purpose}-${randomUUID()}`;
    await db(SIGNING_KEYS_TABLE)
      .insert({
        purpose,
        kid,
        private_jwk: JSON.stringify(await exportJWK(privateKey)),
        public_jwk: JSON.stringify(await exportJWK(publicKey)),
        created_at: new Date().toISOString(),
      })
      .onConflict("purpose")
      .ignore();
    row = await db(SIGNING_KEYS_TABLE).where({ purpose }).first();
  }
  const stored = JSON.parse(row.public_jwk) as JWK;
  const storedAlg: KeyAlg = stored.kty === "EC" ? "ES256" : "EdDSA";
  const publicJwk = { ...stored, kid: row.kid, alg: storedAlg, use: "sig" };
  return {
    kid: row.kid,
    alg: storedAlg,
    privateKey: (await importJWK(JSON.parse(row.private_jwk) as JWK, storedAlg)) as CryptoKey,
    publicKey: (await importJWK(publicJwk, storedAlg)) as CryptoKey,
    publicJwk,
  };
}
