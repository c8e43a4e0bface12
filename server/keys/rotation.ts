/**
 * Key rotation, as the operator runs it (`npm run admin -- <service> rotate-keys`): a new key is
 * published at once and signs from `now + delay`, by when every instance has read it (they read
 * the ring every SIGNING_KEY_REFRESH_SECONDS) and every client's cached JWKS (max-age 300 s) has
 * been fetched again. The key it replaces keeps verifying until the last token it signed has
 * expired, then retires (server/keys/schedule.ts).
 */
import type { Knex } from "knex";
import type { KeyEncryption } from "../security/key-encryption.ts";
import type { KeyPurpose } from "./ring.ts";
import { keySchedule, type KeyState } from "./schedule.ts";
import { insertKeyRow, newKeyRow, readKeyRows } from "./store.ts";

export class RotationRefused extends Error {
  override name = "RotationRefused";
}

export async function keyStates(db: Knex, purpose: KeyPurpose, now: Date): Promise<KeyState[]> {
  const rows = await readKeyRows(db, purpose.purpose);
  return keySchedule(
    rows.map((r) => ({ kid: r.kid, publishAtMs: Date.parse(r.publish_at), activateAtMs: Date.parse(r.activate_at) })),
    now.getTime(),
    purpose.maxTokenLifetimeSeconds * 1000,
  );
}

export interface Rotation {
  purpose: string;
  kid: string;
  activateAt: Date;
  /** The key signing until then, and when it retires. */
  replaces: { kid: string; retireAt: Date } | undefined;
}

/** Adds the next key of `purpose`. Refused while an earlier rotation still waits for its activation. */
export async function rotateKey(o: {
  db: Knex;
  purpose: KeyPurpose;
  now: Date;
  delaySeconds: number;
  encryption: KeyEncryption;
}): Promise<Rotation> {
  const before = await keyStates(o.db, o.purpose, o.now);
  const pending = before.find((s) => s.state === "pending");
  if (pending) {
    throw new RotationRefused(
      `${o.purpose.purpose}: key ${pending.kid} is already waiting to sign from ${new Date(pending.activateAtMs).toISOString()}; rotate again after that.`,
    );
  }
  // A purpose without keys (the service never started) has no token and no cached JWKS to wait for.
  const activateAt = new Date(o.now.getTime() + (before.length ? o.delaySeconds * 1000 : 0));
  const row = await newKeyRow({ purpose: o.purpose.purpose, alg: o.purpose.alg, now: o.now, activateAt, encryption: o.encryption });
  await insertKeyRow(o.db, row);
  const after = await keyStates(o.db, o.purpose, o.now);
  const signing = after.find((s) => s.state === "signing");
  return {
    purpose: o.purpose.purpose,
    kid: row.kid,
    activateAt,
    replaces: signing && { kid: signing.kid, retireAt: new Date(signing.retireAtMs!) },
  };
}
