/**
 * The factors store: a user's second factors (X-ID-MFA-1), their recovery codes (X-ID-MFA-3), the
 * second-factor step of sign-ins in flight (X-ID-MFA-4), and the second-factor policy of
 * applications and organizations (X-ID-MFA-7). Every single-use rule is one conditional UPDATE or
 * DELETE whose row count decides, so of two concurrent uses exactly one wins.
 */
import type { Knex } from "knex";
import { isUniqueViolation, type Tx } from "../../../server/storage/transaction.ts";
import {
  applications,
  type FactorChallengeRow,
  type FactorRow,
  factorChallenges,
  factors,
  organizations,
  type RecoveryCodeRow,
  recoveryCodes,
} from "./schema.ts";

export interface FactorStore {
  /** The user's factors, confirmed or waiting for their first code, oldest first. */
  list(userId: string): Promise<FactorRow[]>;
  find(id: string): Promise<FactorRow | undefined>;
  /** Starts (or restarts) an enrolment: false when the factor is already confirmed (the row stays). */
  saveUnconfirmed(row: FactorRow): Promise<boolean>;
  /** Confirms an unconfirmed factor with its first accepted step: false when another request did first. */
  confirm(id: string, step: number, at: string, tx?: Tx): Promise<boolean>;
  /** Accepts `step` of a confirmed factor: false when that step or a later one was accepted already (replay). */
  acceptStep(id: string, step: number, at: string): Promise<boolean>;
  /** Removes a factor and, when it was the user's last confirmed one, the recovery codes: false when it was gone. */
  remove(id: string, userId: string, tx?: Tx): Promise<boolean>;

  /** Replaces every recovery code of the user with `rows`. */
  replaceRecoveryCodes(userId: string, rows: RecoveryCodeRow[], tx?: Tx): Promise<void>;
  /** Marks the code used: false when unknown, another user's, or used already. */
  useRecoveryCode(userId: string, codeHash: string, at: string, tx?: Tx): Promise<boolean>;
  /** How many of the user's recovery codes are left unused. */
  unusedRecoveryCodes(userId: string): Promise<number>;

  insertChallenge(row: FactorChallengeRow): Promise<void>;
  /** The challenge, unless it expired at `now`. */
  findChallenge(idHash: string, now: string): Promise<FactorChallengeRow | undefined>;
  /** Ends the challenge: true for the one caller that deleted it. */
  takeChallenge(idHash: string): Promise<boolean>;
  /** Deletes the challenges expired at `now`. */
  removeExpiredChallenges(now: string): Promise<void>;

  /** The application's policy and its organization's (null where none was set). */
  policies(applicationId: string): Promise<{ application: string | null; organization: string | null }>;
  setApplicationPolicy(applicationId: string, policy: string | null): Promise<void>;
  setOrganizationPolicy(organizationId: string, policy: string | null): Promise<void>;

  /**
   * An admin's reset (X-ID-UADM-7): removes the user's factors of `kind`, confirmed or pending,
   * and the recovery codes when no confirmed factor is left. True when anything was removed.
   */
  removeKindOf(userId: string, kind: string, tx: Tx): Promise<boolean>;
}

export function knexFactors(db: Knex): FactorStore {
  const unusedStep = (q: Knex.QueryBuilder, step: number) => q.where((w) => w.whereNull("last_step").orWhere("last_step", "<", step));
  return {
    list: (userId) =>
      db<FactorRow>(factors.name)
        .where({ user_id: userId })
        .orderBy([{ column: "created_at" }, { column: "id" }]),
    find: (id) => db<FactorRow>(factors.name).where({ id }).first(),
    async saveUnconfirmed(row) {
      return db.transaction(async (tx) => {
        await tx(factors.name).where({ id: row.id }).whereNull("confirmed_at").delete();
        try {
          await tx(factors.name).insert(row);
          return true;
        } catch (err) {
          if (isUniqueViolation(err)) return false;
          throw err;
        }
      });
    },
    async confirm(id, step, at, tx) {
      const q = (tx ?? db)(factors.name).where({ id }).whereNull("confirmed_at");
      const n = await unusedStep(q, step).update({ confirmed_at: at, last_step: step, last_used_at: at });
      return n === 1;
    },
    async acceptStep(id, step, at) {
      const q = db(factors.name).where({ id }).whereNotNull("confirmed_at");
      return (await unusedStep(q, step).update({ last_step: step, last_used_at: at })) === 1;
    },
    async remove(id, userId, tx) {
      const run = async (t: Knex | Tx) => {
        const n = await t(factors.name).where({ id, user_id: userId }).delete();
        const left = await t(factors.name).where({ user_id: userId }).whereNotNull("confirmed_at").first("id");
        if (!left) await t(recoveryCodes.name).where({ user_id: userId }).delete();
        return n === 1;
      };
      return tx ? run(tx) : db.transaction(run);
    },

    async replaceRecoveryCodes(userId, rows, tx) {
      const run = async (t: Knex | Tx) => {
        await t(recoveryCodes.name).where({ user_id: userId }).delete();
        if (rows.length) await t(recoveryCodes.name).insert(rows);
      };
      await (tx ? run(tx) : db.transaction(run));
    },
    async useRecoveryCode(userId, codeHash, at, tx) {
      const n = await (tx ?? db)(recoveryCodes.name)
        .where({ code_hash: codeHash, user_id: userId })
        .whereNull("used_at")
        .update({ used_at: at });
      return n === 1;
    },
    async unusedRecoveryCodes(userId) {
      const row = await db(recoveryCodes.name).where({ user_id: userId }).whereNull("used_at").count({ n: "*" }).first();
      return Number(row?.n ?? 0);
    },

    async insertChallenge(row) {
      await db(factorChallenges.name).insert(row);
    },
    findChallenge: (idHash, now) =>
      db<FactorChallengeRow>(factorChallenges.name).where({ id_hash: idHash }).andWhere("expires_at", ">", now).first(),
    async takeChallenge(idHash) {
      return (await db(factorChallenges.name).where({ id_hash: idHash }).delete()) === 1;
    },
    async removeExpiredChallenges(now) {
      await db(factorChallenges.name).where("expires_at", "<=", now).delete();
    },

    async policies(applicationId) {
      const row = await db(`${applications.name} as a`)
        .leftJoin(`${organizations.name} as o`, "o.id", "a.organization_id")
        .where("a.id", applicationId)
        .first({ application: "a.mfa_policy", organization: "o.mfa_policy" });
      return { application: row?.application ?? null, organization: row?.organization ?? null };
    },
    async setApplicationPolicy(applicationId, policy) {
      await db(applications.name).where({ id: applicationId }).update({ mfa_policy: policy });
    },
    async setOrganizationPolicy(organizationId, policy) {
      await db(organizations.name).where({ id: organizationId }).update({ mfa_policy: policy });
    },

    async removeKindOf(userId, kind, tx) {
      const removed = await tx(factors.name).where({ user_id: userId, kind }).delete();
      const left = await tx(factors.name).where({ user_id: userId }).whereNotNull("confirmed_at").first("id");
      const codes = left ? 0 : await tx(recoveryCodes.name).where({ user_id: userId }).delete();
      return removed + codes > 0;
    },
  };
}
