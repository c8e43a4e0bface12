/**
 * The passkeys store: each user's WebAuthn credentials and the challenges of their ceremonies
 * (X-ID-PK-1, X-ID-PK-2). Every single-use or ordering rule is a conditional write whose row count
 * decides: a challenge is consumed once, a signature counter only moves from the value it was read at.
 */
import type { Knex } from "knex";
import type { Tx } from "../../../server/storage/transaction.ts";
import { type PasskeyChallengeRow, type PasskeyRow, passkeyChallenges, passkeys } from "./schema.ts";

export interface PasskeyStore {
  insertChallenge(row: PasskeyChallengeRow): Promise<void>;
  /**
   * Consumes a challenge of `purpose` bound to `binding` that is unused and unexpired at `now`:
   * the row, or undefined when another caller consumed it first, it expired, or it was never ours.
   */
  consumeChallenge(challenge: string, purpose: string, binding: string, now: string): Promise<PasskeyChallengeRow | undefined>;
  /** False when the credential id is already registered (to anyone). */
  insert(row: PasskeyRow, tx?: Tx): Promise<boolean>;
  listByUser(userId: string): Promise<PasskeyRow[]>;
  findByCredentialId(credentialId: string): Promise<PasskeyRow | undefined>;
  /** Renames the user's passkey: false when the user has no passkey `id`. */
  rename(userId: string, id: string, name: string, tx?: Tx): Promise<boolean>;
  /** Removes the user's passkey: false when the user has no passkey `id`. */
  remove(userId: string, id: string, tx?: Tx): Promise<boolean>;
  /** Records a sign-in with the passkey: its counter moves from `fromCounter` to `toCounter` only if it still is `fromCounter`. */
  recordUse(id: string, fromCounter: number, toCounter: number, at: string): Promise<boolean>;
}

export function knexPasskeys(db: Knex): PasskeyStore {
  return {
    async insertChallenge(row) {
      await db(passkeyChallenges.name).insert(row);
    },
    async consumeChallenge(challenge, purpose, binding, now) {
      const taken = await db(passkeyChallenges.name)
        .where({ challenge, purpose, binding })
        .whereNull("consumed_at")
        .andWhere("expires_at", ">", now)
        .update({ consumed_at: now });
      if (taken !== 1) return undefined;
      return db<PasskeyChallengeRow>(passkeyChallenges.name).where({ challenge }).first();
    },
    async insert(row, tx) {
      // knex reports an ignored insert differently per engine: what decides is whose row is there.
      await (tx ?? db)(passkeys.name).insert(row).onConflict("credential_id").ignore();
      const stored = await (tx ?? db)<PasskeyRow>(passkeys.name).where({ credential_id: row.credential_id }).first("id");
      return stored?.id === row.id;
    },
    listByUser: (userId) =>
      db<PasskeyRow>(passkeys.name)
        .where({ user_id: userId })
        .orderBy([{ column: "created_at" }, { column: "id" }]),
    findByCredentialId: (credentialId) => db<PasskeyRow>(passkeys.name).where({ credential_id: credentialId }).first(),
    async rename(userId, id, name, tx) {
      return (await (tx ?? db)(passkeys.name).where({ id, user_id: userId }).update({ name })) === 1;
    },
    async remove(userId, id, tx) {
      return (await (tx ?? db)(passkeys.name).where({ id, user_id: userId }).delete()) === 1;
    },
    async recordUse(id, fromCounter, toCounter, at) {
      return (await db(passkeys.name).where({ id, counter: fromCounter }).update({ counter: toCounter, last_used_at: at })) === 1;
    },
  };
}
